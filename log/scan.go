package log

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
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
	s.maxTs.Store(s.tindex.lastTs)
	s.offOfMaxTs = s.tindex.lastRel
	s.bytesSinceIndex = 0
	return s.scan(pos, expect, fileSize, verifyFrom, interval)
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
	br := bufio.NewReaderSize(io.NewSectionReader(s.log, pos, fileSize-pos), scanBufSize)
	var hdr [BatchHeaderSize]byte
	var bad string
	for pos < fileSize && bad == "" {
		if fileSize-pos < BatchHeaderSize {
			bad = fmt.Sprintf("torn batch header (%d bytes)", fileSize-pos)
			break
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil, fmt.Errorf("read segment %s: %w", s.path, err)
		}
		size := batchSize(hdr[:])
		h, _ := ParseBatchHeader(hdr[:])
		switch {
		case h.Length < minBatchLength:
			bad = fmt.Sprintf("batch length %d", h.Length)
		case pos+size > fileSize:
			bad = fmt.Sprintf("torn batch: %d bytes, %d remain", size, fileSize-pos)
		case h.Magic != 2:
			bad = fmt.Sprintf("magic %d", h.Magic)
		case h.LastOffsetDelta < 0:
			bad = fmt.Sprintf("last offset delta %d", h.LastOffsetDelta)
		case h.BaseOffset != expect:
			bad = fmt.Sprintf("base offset %d, expected %d", h.BaseOffset, expect)
		case !s.fits(h.NextOffset()):
			bad = fmt.Sprintf("offset %d does not fit a segment based at %d", h.NextOffset(), s.base)
		}
		if bad != "" {
			break
		}
		body := size - BatchHeaderSize
		if h.BaseOffset >= verifyFrom {
			crc, err := crcOf(br, crc32.Update(0, castagnoli, hdr[offAttributes:]), body)
			if err != nil {
				return nil, fmt.Errorf("read segment %s: %w", s.path, err)
			}
			if crc != h.CRC {
				bad = fmt.Sprintf("crc %08x, header says %08x", crc, h.CRC)
				break
			}
		} else if _, err := br.Discard(int(body)); err != nil {
			return nil, fmt.Errorf("read segment %s: %w", s.path, err)
		}
		if err := s.track(s.rel(h.BaseOffset), pos, size, h.MaxTimestamp, interval); err != nil {
			return nil, err
		}
		pos += size
		expect = h.NextOffset()
	}
	s.size.Store(pos)
	s.next.Store(expect)
	if bad != "" {
		return &corruption{pos: pos, next: expect, reason: bad}, nil
	}
	return nil, nil
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

// errCorruptSegment reports bytes in a segment that do not frame as batches
// where the log expects them to; it means the files changed underneath.
var errCorruptSegment = errors.New("corrupt segment")

// headerWindow is the size of the window headerReader reads through.
const headerWindow = 8 << 10

var windowPool = sync.Pool{New: func() any { b := make([]byte, headerWindow); return &b }}

// headerReader reads batch headers at increasing positions of a segment
// through a window, so that walking many small batches takes few preads.
type headerReader struct {
	s   *segment
	buf *[]byte
	off int64 // file position of the window's first byte
	n   int   // valid bytes in the window
}

func newHeaderReader(s *segment) *headerReader {
	return &headerReader{s: s, buf: windowPool.Get().(*[]byte)}
}

func (r *headerReader) release() {
	windowPool.Put(r.buf)
	r.buf = nil
}

// header returns the header of the batch at pos, which must end at or
// before limit, and the batch's size.
func (r *headerReader) header(pos, limit int64) ([]byte, int64, error) {
	if pos+BatchHeaderSize > limit {
		return nil, 0, fmt.Errorf("%w: %s: batch header at %d runs past %d", errCorruptSegment, r.s.path, pos, limit)
	}
	if pos < r.off || pos+BatchHeaderSize > r.off+int64(r.n) {
		buf := *r.buf
		want := int(min(int64(len(buf)), limit-pos))
		n, err := r.s.log.ReadAt(buf[:want], pos)
		if n < BatchHeaderSize {
			return nil, 0, fmt.Errorf("read segment %s at %d: %w", r.s.path, pos, err)
		}
		r.off, r.n = pos, n
	}
	hdr := (*r.buf)[pos-r.off : pos-r.off+BatchHeaderSize]
	size := batchSize(hdr)
	if size < BatchHeaderSize || pos+size > limit {
		return nil, 0, fmt.Errorf("%w: %s: batch at %d claims %d bytes, limit %d", errCorruptSegment, r.s.path, pos, size, limit)
	}
	return hdr, size, nil
}

// seek returns a position to start walking batches from to reach the
// relative offset rel, and the base offset of the batch there: the offset
// index's entry if the batch at its position carries the offset it names,
// or else the segment's start, so a damaged index costs time, not answers.
func (r *headerReader) seek(rel uint32, limit int64) (pos, base int64, err error) {
	entryRel, pos, found, err := r.s.index.lookup(rel)
	if err != nil || !found {
		return 0, r.s.base, err
	}
	base = r.s.base + int64(entryRel)
	if pos+BatchHeaderSize <= limit {
		if hdr, _, err := r.header(pos, limit); err == nil && batchBase(hdr) == base {
			return pos, base, nil
		}
	}
	return 0, r.s.base, nil
}

// walk visits the batches from pos, whose base offset must be base, up to
// limit, checking that their offsets are contiguous, until visit returns
// true. It returns where it stopped.
func (r *headerReader) walk(pos, base, limit int64, visit func(hdr []byte) bool) (int64, error) {
	for pos < limit {
		hdr, size, err := r.header(pos, limit)
		if err != nil {
			return 0, err
		}
		if got := batchBase(hdr); got != base {
			return 0, fmt.Errorf("%w: %s: batch at %d has base offset %d, expected %d", errCorruptSegment, r.s.path, pos, got, base)
		}
		if visit(hdr) {
			return pos, nil
		}
		base = batchNext(hdr)
		pos += size
	}
	return pos, nil
}

// findBatch returns the position and size of the batch containing offset,
// which must lie in the segment below its published end.
func (r *headerReader) findBatch(offset, limit int64) (pos, size int64, err error) {
	pos, base, err := r.seek(r.s.rel(offset), limit)
	if err != nil {
		return 0, 0, err
	}
	found := false
	pos, err = r.walk(pos, base, limit, func(hdr []byte) bool {
		found = batchNext(hdr) > offset
		size = batchSize(hdr)
		return found
	})
	if err != nil {
		return 0, 0, err
	}
	if !found {
		return 0, 0, fmt.Errorf("%w: %s: offset %d not found", errCorruptSegment, r.s.path, offset)
	}
	return pos, size, nil
}
