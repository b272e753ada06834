package log

import (
	"cmp"
	"fmt"
	"slices"
)

// OffsetForTimestamp answers ListOffsets for a timestamp as Kafka does: it
// returns the offset and timestamp of the first record, in offset order, at
// or past the log start offset whose timestamp is at least ts. ok is false
// if no record qualifies. A record's timestamp is its batch's base
// timestamp plus its delta, or in a LogAppendTime batch the batch's max
// timestamp. Batches whose max timestamp is below ts are skipped unread,
// using the segments' max timestamps and time indexes; the records of the
// others are decoded (and decompressed) until one qualifies. The special
// ListOffsets timestamps are the caller's to map: -1 is EndOffset, -2
// StartOffset and -3 MaxTimestampOffset.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, ErrClosed
	}
	end, start := l.end.Load(), l.start.Load()
	for _, seg := range l.segs {
		if seg.maxTs.Load() < ts || seg.next.Load() <= start {
			continue
		}
		var m recordMatch
		err := l.withFiles(seg, func() (err error) {
			m, err = seg.findTimestamp(ts, start, end)
			return err
		})
		if err != nil {
			return 0, 0, false, fmt.Errorf("offset for timestamp %d: %w", ts, err)
		}
		if m.found {
			return m.offset, m.timestamp, true, nil
		}
	}
	return 0, 0, false, nil
}

// findTimestamp finds the segment's first record at or past start, below
// end, whose timestamp is at least ts. Only batches whose max timestamp
// reaches ts are decoded; usually the first such batch holds the record,
// but its records that do may all lie below start.
func (s *segment) findTimestamp(ts, start, end int64) (recordMatch, error) {
	limit := s.size.Load()
	hr := newHeaderReader(s)
	defer hr.release()
	pos, base, err := s.seekFor(hr, ts, start, limit)
	if err != nil {
		return recordMatch{}, err
	}
	for {
		at, h, found, err := hr.nextBatch(pos, base, limit, end, func(hdr []byte) bool {
			return batchNext(hdr) > start && batchMaxTimestamp(hdr) >= ts
		})
		if err != nil || !found {
			return recordMatch{}, err
		}
		m, err := hr.searchBatch(at, h, func(records []byte) (recordMatch, error) {
			return recordAtOrAfter(h, records, start, ts)
		})
		if err != nil || m.found {
			return m, err
		}
		pos, base = at+h.Size(), h.NextOffset()
	}
}

// MaxTimestampOffset answers ListOffsets for timestamp -3 (KIP-734): the
// offset and timestamp of the record with the largest timestamp at or past
// the log start offset, the first one if several share it. ok is false if
// the log holds no record with a timestamp of zero or more (-1 means none).
// The segments' max timestamps pick the segment, its time index the batch,
// and only that batch's records are decoded; only where the log start
// offset has cut off the records that set a segment's max timestamp are
// that segment's remaining batch headers all read.
func (l *Log) MaxTimestampOffset() (offset, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, ErrClosed
	}
	// Load end first: the batches below it raised their segments' max
	// timestamps before it was published, so the maxima read after it
	// bound every batch the search sees.
	end, start := l.end.Load(), l.start.Load()
	type candidate struct {
		seg   *segment
		maxTs int64
	}
	var cands []candidate
	for _, seg := range l.segs {
		if m := seg.maxTs.Load(); m >= 0 && seg.next.Load() > start && seg.base < end {
			cands = append(cands, candidate{seg, m})
		}
	}
	// Largest max first; the stable sort keeps equal maxima in offset order.
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.maxTs, a.maxTs) })
	var best recordMatch
	for _, c := range cands {
		if best.found && c.maxTs < best.timestamp {
			break
		}
		if best.found && c.maxTs == best.timestamp && c.seg.base > best.offset {
			continue
		}
		var m recordMatch
		err := l.withFiles(c.seg, func() (err error) {
			m, err = c.seg.maxRecord(c.maxTs, start, end)
			return err
		})
		if err != nil {
			return 0, 0, false, fmt.Errorf("max timestamp offset: %w", err)
		}
		if m.beats(best) {
			best = m
		}
	}
	return best.offset, best.timestamp, best.found, nil
}

// maxRecord finds the segment's first record at or past start, below end,
// with the largest timestamp; m bounds the max timestamps of its batches
// below end. Usually the first batch that reached m holds the answer.
func (s *segment) maxRecord(m, start, end int64) (recordMatch, error) {
	limit := s.size.Load()
	hr := newHeaderReader(s)
	defer hr.release()
	pos, base, err := s.seekFor(hr, m, start, limit)
	if err != nil {
		return recordMatch{}, err
	}
	at, h, found, err := hr.nextBatch(pos, base, limit, end, func(hdr []byte) bool {
		return batchNext(hdr) > start && batchMaxTimestamp(hdr) >= m
	})
	if err != nil {
		return recordMatch{}, err
	}
	if found {
		best, err := hr.searchBatch(at, h, func(records []byte) (recordMatch, error) {
			return maxRecordIn(h, records, start)
		})
		if err != nil || (best.found && best.timestamp >= m) {
			return best, err
		}
	}
	// The records that reached m lie below start, or the batch that raised
	// m was appended after end was read.
	return s.scanMax(hr, start, end, limit)
}

// scanMax is maxRecord by brute force: it reads the header of every batch
// from start on. A batch's max timestamp is its records' largest, except in
// the batch that start cuts into, whose records from start on are decoded.
func (s *segment) scanMax(hr *headerReader, start, end, limit int64) (recordMatch, error) {
	pos, base, err := hr.seek(s.rel(max(start, s.base)), limit)
	if err != nil {
		return recordMatch{}, err
	}
	cutAt, winAt, top := int64(-1), int64(-1), int64(-1)
	var cut, win BatchHeader
	_, err = hr.walk(pos, base, limit, func(hdr []byte) bool {
		at := pos
		pos += batchSize(hdr)
		switch {
		case batchBase(hdr) >= end:
			return true
		case batchNext(hdr) <= start:
		case batchBase(hdr) < start:
			cutAt, cut = at, headerOf(hdr)
		case batchMaxTimestamp(hdr) > top:
			winAt, win, top = at, headerOf(hdr), batchMaxTimestamp(hdr)
		}
		return false
	})
	if err != nil {
		return recordMatch{}, err
	}
	var best recordMatch
	for _, b := range []struct {
		at int64
		h  BatchHeader
	}{{cutAt, cut}, {winAt, win}} {
		if b.at < 0 {
			continue
		}
		m, err := hr.searchBatch(b.at, b.h, func(records []byte) (recordMatch, error) {
			return maxRecordIn(b.h, records, start)
		})
		if err != nil {
			return recordMatch{}, err
		}
		if m.beats(best) {
			best = m
		}
	}
	return best, nil
}

// headerOf parses a header that the header reader has bounds-checked.
func headerOf(hdr []byte) BatchHeader {
	h, _ := ParseBatchHeader(hdr)
	return h
}
