package log

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// scanBufSize is the read buffer for sequential scans during recovery.
const scanBufSize = 256 << 10

// corruption describes where a segment stops holding valid batches: the
// position of the first bad batch, the offset that batch should have had,
// and why it is bad.
type corruption struct {
	pos    int64
	next   int64
	reason string
}

func (c *corruption) String() string {
	return fmt.Sprintf("at position %d (offset %d): %s", c.pos, c.next, c.reason)
}

// errIndexMismatch reports an offset index entry that does not point at the
// batch it names.
var errIndexMismatch = errors.New("offset index entry does not match the log")

// restore rebuilds the segment's in-memory state (size, next offset, max
// timestamp, index bookkeeping) from its indexes and from the batches after
// the last offset index entry, which it checks: framing, contiguous offsets,
// and the CRC of every batch at or past verifyFrom. Index entries are added
// for those batches as Append would have. A non-nil corruption says where
// the valid batches end; state covers the batches before it.
func (s *segment) restore(fileSize, verifyFrom int64, interval int32) (*corruption, error) {
	pos, expect := int64(0), s.base
	if n := s.index.entries(); n > 0 {
		rel, p, err := s.index.entry(n - 1)
		if err != nil {
			return nil, err
		}
		pos, expect = int64(p), s.base+int64(rel)
		if err := s.checkBatchAt(pos, expect, fileSize); err != nil {
			return nil, err
		}
	}
	if err := s.checkTimeIndex(fileSize); err != nil {
		return nil, err
	}
	s.maxTs.Store(s.tindex.lastTs)
	s.offOfMaxTs = s.tindex.lastRel
	s.bytesSinceIndex = 0
	return s.scan(pos, expect, fileSize, verifyFrom, interval)
}

// checkTimeIndex checks the last time index entry (ts, rel) against the
// log: the batch at rel must exist and have max timestamp ts. The segment's
// max timestamp, which retention trusts, comes from that entry.
func (s *segment) checkTimeIndex(fileSize int64) error {
	if s.tindex.entries() == 0 {
		return nil
	}
	off := s.base + int64(s.tindex.lastRel)
	hr := newHeaderReader(s)
	defer hr.release()
	pos, _, err := hr.findBatch(off, fileSize)
	if err != nil {
		return fmt.Errorf("%w: time index entry for offset %d: %w", errIndexMismatch, off, err)
	}
	hdr, _, err := hr.header(pos, fileSize)
	if err != nil {
		return fmt.Errorf("%w: time index entry for offset %d: %w", errIndexMismatch, off, err)
	}
	if batchBase(hdr) != off || batchMaxTimestamp(hdr) != s.tindex.lastTs {
		return fmt.Errorf("%w: time index says offset %d reached timestamp %d; the batch there starts at %d with max %d",
			errIndexMismatch, off, s.tindex.lastTs, batchBase(hdr), batchMaxTimestamp(hdr))
	}
	return nil
}

// checkBatchAt checks that a batch with base offset want starts at pos.
func (s *segment) checkBatchAt(pos, want, fileSize int64) error {
	if pos+BatchHeaderSize > fileSize {
		return fmt.Errorf("%w: position %d past the log's %d bytes", errIndexMismatch, pos, fileSize)
	}
	var hdr [BatchHeaderSize]byte
	if _, err := s.log.ReadAt(hdr[:], pos); err != nil {
		return fmt.Errorf("read segment %s: %w", s.path, err)
	}
	if got := batchBase(hdr[:]); got != want {
		return fmt.Errorf("%w: batch at %d has base offset %d, index says %d", errIndexMismatch, pos, got, want)
	}
	return nil
}

// scan reads batches from pos, whose base offset must be expect, to
// fileSize, and tracks each valid one.
func (s *segment) scan(pos, expect, fileSize, verifyFrom int64, interval int32) (*corruption, error) {
	sc := newBatchScanner(s, pos, expect, fileSize)
	var bad string
	for sc.pos < fileSize {
		at := sc.pos
		h, why, err := sc.next(func(h BatchHeader) bool { return h.BaseOffset >= verifyFrom })
		if err != nil {
			return nil, err
		}
		if bad = why; bad != "" {
			break
		}
		if err := s.track(s.rel(h.BaseOffset), at, h.Size(), h.MaxTimestamp, interval); err != nil {
			return nil, err
		}
	}
	s.size.Store(sc.pos)
	s.next.Store(sc.expect)
	if bad != "" {
		return &corruption{pos: sc.pos, next: sc.expect, reason: bad}, nil
	}
	return nil, nil
}

// batchScanner reads a segment's batches in order through a buffered
// reader, checking the framing of each against where it should start and
// its CRC when asked. Recovery (scan) and verification (verify.go) share it.
type batchScanner struct {
	s      *segment
	br     *bufio.Reader
	hdr    [BatchHeaderSize]byte
	pos    int64 // where the next batch starts
	expect int64 // the next batch's base offset
	limit  int64 // the scanned bytes end here
}

func newBatchScanner(s *segment, pos, expect, limit int64) *batchScanner {
	return &batchScanner{
		s:      s,
		br:     bufio.NewReaderSize(io.NewSectionReader(s.log, pos, limit-pos), int(min(scanBufSize, max(limit-pos, 0)))),
		pos:    pos,
		expect: expect,
		limit:  limit,
	}
}

// next reads the batch at pos and checks it: its framing, and its CRC
// (CRC-32C from the attributes to the batch's end) if checkCRC says so.
// bad, if not empty, says why the batch is not valid, and the scanner does
// not move; else pos and expect move past the batch. err is a read error.
func (b *batchScanner) next(checkCRC func(BatchHeader) bool) (h BatchHeader, bad string, err error) {
	if b.limit-b.pos < BatchHeaderSize {
		return h, fmt.Sprintf("torn batch header (%d bytes)", b.limit-b.pos), nil
	}
	if _, err := io.ReadFull(b.br, b.hdr[:]); err != nil {
		return h, "", fmt.Errorf("read segment %s: %w", b.s.path, err)
	}
	size := batchSize(b.hdr[:])
	h, _ = ParseBatchHeader(b.hdr[:])
	switch {
	case h.Length < minBatchLength:
		bad = fmt.Sprintf("batch length %d", h.Length)
	case b.pos+size > b.limit:
		bad = fmt.Sprintf("torn batch: %d bytes, %d remain", size, b.limit-b.pos)
	case h.Magic != 2:
		bad = fmt.Sprintf("magic %d", h.Magic)
	case h.LastOffsetDelta < 0:
		bad = fmt.Sprintf("last offset delta %d", h.LastOffsetDelta)
	case h.BaseOffset != b.expect:
		bad = fmt.Sprintf("base offset %d, expected %d", h.BaseOffset, b.expect)
	case !b.s.fits(h.NextOffset()):
		bad = fmt.Sprintf("offset %d does not fit a segment based at %d", h.NextOffset(), b.s.base)
	}
	if bad != "" {
		return h, bad, nil
	}
	body := size - BatchHeaderSize
	if checkCRC(h) {
		crc, err := crcOf(b.br, crc32.Update(0, castagnoli, b.hdr[offAttributes:]), body)
		if err != nil {
			return h, "", fmt.Errorf("read segment %s: %w", b.s.path, err)
		}
		if crc != h.CRC {
			return h, fmt.Sprintf("crc %08x, header says %08x", crc, h.CRC), nil
		}
	} else if _, err := b.br.Discard(int(body)); err != nil {
		return h, "", fmt.Errorf("read segment %s: %w", b.s.path, err)
	}
	b.pos += size
	b.expect = h.NextOffset()
	return h, "", nil
}

// crcOf continues crc over the next n bytes of br without copying them.
func crcOf(br *bufio.Reader, crc uint32, n int64) (uint32, error) {
	for n > 0 {
		chunk, err := br.Peek(int(min(n, int64(br.Size()))))
		if err != nil {
			return 0, err
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		br.Discard(len(chunk))
		n -= int64(len(chunk))
	}
	return crc, nil
}
