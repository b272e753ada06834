package log

import (
	"errors"
	"fmt"
	"sync"
)

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

// cached copies into buf what the window holds from pos on and returns
// how many bytes that was.
func (r *headerReader) cached(buf []byte, pos int64) int {
	if pos < r.off || pos >= r.off+int64(r.n) {
		return 0
	}
	return copy(buf, (*r.buf)[pos-r.off:r.n])
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
