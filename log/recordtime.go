package log

import (
	"fmt"
)

// recordMatch is a record found by a timestamp search.
type recordMatch struct {
	offset    int64
	timestamp int64
	found     bool
}

// beats reports whether m should replace cur as the record with the
// largest timestamp: a larger timestamp, or the same one at a smaller offset.
func (m recordMatch) beats(cur recordMatch) bool {
	if !m.found || !cur.found {
		return m.found
	}
	return m.timestamp > cur.timestamp || (m.timestamp == cur.timestamp && m.offset < cur.offset)
}

// walkRecordTimes calls visit with the offset and timestamp of each record
// at or past offset start of the batch with header h and records section
// records, in offset order, until visit returns true. A record's timestamp
// is the batch's base timestamp plus the record's delta, except in a
// LogAppendTime batch, where every record has the batch's max timestamp:
// there the records are not decoded, and only the first at or past start is
// visited, since the searches below want the first of equal timestamps.
// Records are decoded by walkBatchRecords, with the hard decompression cap.
func walkRecordTimes(h BatchHeader, records []byte, start int64, visit func(offset, timestamp int64) bool) error {
	if h.RecordCount != h.LastOffsetDelta+1 || h.RecordCount <= 0 {
		return fmt.Errorf("record count %d with last offset delta %d", h.RecordCount, h.LastOffsetDelta)
	}
	if h.LogAppendTime() {
		if off := max(h.BaseOffset, start); off < h.NextOffset() {
			visit(off, h.MaxTimestamp)
		}
		return nil
	}
	return walkBatchRecords(h.Compression(), records, h.RecordCount, maxDecompressCap,
		func(delta int32, tsDelta int64) bool {
			off := h.BaseOffset + int64(delta)
			return off >= start && visit(off, h.BaseTimestamp+tsDelta)
		})
}

// recordAtOrAfter finds the batch's first record at or past offset start
// whose timestamp is at least ts.
func recordAtOrAfter(h BatchHeader, records []byte, start, ts int64) (recordMatch, error) {
	var m recordMatch
	err := walkRecordTimes(h, records, start, func(off, rts int64) bool {
		if rts >= ts {
			m = recordMatch{offset: off, timestamp: rts, found: true}
		}
		return m.found
	})
	if err != nil {
		return recordMatch{}, err
	}
	return m, nil
}

// maxRecordIn finds the batch's first record at or past offset start with
// the largest timestamp, ignoring timestamps below zero (-1 is Kafka's "no
// timestamp"). It stops at the first record that reaches the header's max
// timestamp, which no later record can beat.
func maxRecordIn(h BatchHeader, records []byte, start int64) (recordMatch, error) {
	var m recordMatch
	err := walkRecordTimes(h, records, start, func(off, ts int64) bool {
		if ts >= 0 && (!m.found || ts > m.timestamp) {
			m = recordMatch{offset: off, timestamp: ts, found: true}
		}
		return m.found && m.timestamp >= h.MaxTimestamp
	})
	if err != nil {
		return recordMatch{}, err
	}
	return m, nil
}

// searchBatch reads the records of the batch at pos, whose header is h,
// and runs search over them. A LogAppendTime batch's records are not read:
// walkRecordTimes does not need them.
func (r *headerReader) searchBatch(pos int64, h BatchHeader, search func(records []byte) (recordMatch, error)) (recordMatch, error) {
	var records []byte
	if !h.LogAppendTime() {
		p, err := r.batchRecords(pos, h)
		if err != nil {
			return recordMatch{}, err
		}
		defer putBuf(p)
		records = *p
	}
	m, err := search(records)
	if err != nil {
		return recordMatch{}, fmt.Errorf("%w: %s: batch at offset %d: %w", errCorruptSegment, r.s.path, h.BaseOffset, err)
	}
	return m, nil
}

// batchRecords reads the records section of the batch at pos, whose header
// is h, into a pooled buffer that the caller returns with putBuf. Bytes the
// header window already holds are not read again.
func (r *headerReader) batchRecords(pos int64, h BatchHeader) (*[]byte, error) {
	n := h.Size() - BatchHeaderSize
	p := getBuf(int(n))
	buf := (*p)[:n]
	at := pos + BatchHeaderSize
	if got := int64(r.cached(buf, at)); got < n {
		if _, err := r.s.log.ReadAt(buf[got:], at+got); err != nil {
			putBuf(p)
			return nil, fmt.Errorf("read segment %s at %d: %w", r.s.path, at+got, err)
		}
	}
	*p = buf
	return p, nil
}

// nextBatch walks from pos, where the batch with base offset base starts,
// to the first batch below end for which want holds, and returns its
// position and header; found is false if there is none before limit.
func (r *headerReader) nextBatch(pos, base, limit, end int64, want func(hdr []byte) bool) (at int64, h BatchHeader, found bool, err error) {
	at, err = r.walk(pos, base, limit, func(hdr []byte) bool {
		if batchBase(hdr) >= end {
			return true
		}
		if want(hdr) {
			h, found = headerOf(hdr), true
		}
		return found
	})
	if err != nil || !found {
		return 0, BatchHeader{}, false, err
	}
	return at, h, true, nil
}

// seekFor returns where to start walking the segment for the batches that
// end past start and whose max timestamp may reach ts, and the base offset
// of the batch there: past every batch the time index shows to stay below
// ts, and past the batches below start.
func (s *segment) seekFor(r *headerReader, ts, start, limit int64) (pos, base int64, err error) {
	rel, ok, err := s.tindex.lookup(ts)
	if err != nil {
		return 0, 0, err
	}
	if start > s.base {
		rel, ok = max(rel, s.rel(start)), true
	}
	if !ok {
		return 0, s.base, nil
	}
	return r.seek(rel, limit)
}
