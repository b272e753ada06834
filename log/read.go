package log

import (
	"context"
	"fmt"
)

// Read returns whole batches starting with the one that holds offset, as
// stored (base offsets absolute), never past the published end offset. The
// total is at most maxBytes, except that the first batch is returned whole
// however large (KIP-74), so a consumer always makes progress. A read may
// span segments. offset == EndOffset returns nothing and no error; an
// offset below StartOffset or above EndOffset returns ErrOffsetOutOfRange.
// Read is safe to call from many goroutines, concurrently with the writer.
func (l *Log) Read(offset int64, maxBytes int32) ([]byte, error) {
	return l.ReadWith(offset, maxBytes, nil)
}

// ReadWith is Read with the caller's buffer: alloc(n) returns a buffer
// with room for n bytes (its length does not matter), for example one
// reused from an earlier read, so that the read neither allocates nor
// zeroes it. A nil alloc, or one that returns too small a buffer, means a
// fresh one. The returned bytes are a prefix of that buffer.
//
// A read never serves unverified bytes: it verifies such a segment first
// (see verify.go), and returns ErrDamaged if the segment is damaged.
func (l *Log) ReadWith(offset int64, maxBytes int32, alloc func(n int) []byte) ([]byte, error) {
	for {
		b, unverified, err := l.readWith(offset, maxBytes, alloc)
		if len(unverified) == 0 {
			return b, err
		}
		for _, s := range unverified {
			if err := l.verify(context.Background(), s, nil); err != nil {
				return nil, fmt.Errorf("read offset %d: %w", offset, err)
			}
		}
	}
}

// readWith is ReadWith, or the unverified segments it would read from:
// the one holding offset if it is, else the later ones the read reaches;
// it reads nothing then.
func (l *Log) readWith(offset int64, maxBytes int32, alloc func(n int) []byte) ([]byte, []*segment, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, nil, ErrClosed
	}
	// Load end before any segment size: sizes are published first, so
	// every batch below end lies within the sizes read after it.
	end, start := l.end.Load(), l.start.Load()
	if offset < start || offset > end {
		return nil, nil, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return nil, nil, nil
	}
	i := l.segmentFor(offset)
	seg := l.segs[i]
	if seg.unverified(offset) {
		return nil, []*segment{seg}, nil
	}
	if err := l.cache.acquire(seg); err != nil {
		return nil, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}
	defer l.cache.release(seg)
	hr := newHeaderReader(seg)
	defer hr.release()
	pos, firstSize, err := hr.findBatch(offset, seg.size.Load())
	if err != nil {
		return nil, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}

	// Size the buffer from what the segments hold past pos, then cut it
	// back to whole batches below end.
	avail := seg.size.Load() - pos
	for _, s := range l.segs[i+1:] {
		avail += s.size.Load()
	}
	n := max(min(int64(maxBytes), avail), firstSize)
	if later := l.unverifiedFrom(i+1, n-(seg.size.Load()-pos)); len(later) > 0 {
		return nil, later, nil
	}
	buf := allocRead(alloc, n)
	// The header walk's window often holds the data already (reads at the
	// tail always do); take it from there and read only the rest.
	filled := int64(hr.cached(buf, pos))
	for s, at := i, pos+filled; filled < n && s < len(l.segs); s, at = s+1, 0 {
		want := min(n-filled, l.segs[s].size.Load()-at)
		if err := l.readAt(l.segs[s], buf[filled:filled+want], at, s == i); err != nil {
			return nil, nil, err
		}
		filled += want
	}
	return buf[:wholeBatches(buf[:filled], end)], nil, nil
}

// unverifiedFrom returns the unverified segments among those from index
// i on that a read of n more bytes reaches. Callers hold mu.
func (l *Log) unverifiedFrom(i int, n int64) []*segment {
	var out []*segment
	for ; n > 0 && i < len(l.segs); i++ {
		if s := l.segs[i]; s.unverified(s.base) {
			out = append(out, s)
		}
		n -= l.segs[i].size.Load()
	}
	return out
}

// readAt fills buf from seg's log at pos, holding the segment's files for
// the read unless the caller does (held).
func (l *Log) readAt(seg *segment, buf []byte, pos int64, held bool) error {
	if len(buf) == 0 {
		return nil
	}
	if !held {
		if err := l.cache.acquire(seg); err != nil {
			return fmt.Errorf("read %s: %w", seg.path, err)
		}
		defer l.cache.release(seg)
	}
	if _, err := seg.log.ReadAt(buf, pos); err != nil {
		return fmt.Errorf("read %s at %d: %w", seg.path, pos, err)
	}
	return nil
}

// withFiles runs f with s's files held open.
func (l *Log) withFiles(s *segment, f func() error) error {
	if err := l.cache.acquire(s); err != nil {
		return err
	}
	defer l.cache.release(s)
	return f()
}

// allocRead returns a buffer of n bytes from alloc, or a fresh one when
// alloc is nil or its buffer too small.
func allocRead(alloc func(n int) []byte, n int64) []byte {
	if alloc != nil {
		if b := alloc(int(n)); int64(cap(b)) >= n {
			return b[:n]
		}
	}
	return make([]byte, n)
}

// wholeBatches returns the length of the prefix of buf made of whole
// batches with base offsets below end. The first batch is known to be
// whole and below end.
func wholeBatches(buf []byte, end int64) int {
	cut := 0
	for {
		rest := buf[cut:]
		if len(rest) < BatchHeaderSize {
			return cut
		}
		size := batchSize(rest)
		if size < BatchHeaderSize || size > int64(len(rest)) || (cut > 0 && batchBase(rest) >= end) {
			return cut
		}
		cut += int(size)
	}
}
