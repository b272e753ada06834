package log

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
)

// FileRange is record batches left in a segment file: Len bytes at Off of
// File, which is the caller's own descriptor for the segment (a
// duplicate), so the bytes stay readable after the segment is rolled,
// deleted by retention or closed. The caller closes File; one it forgets
// is closed by the garbage collector, like any *os.File.
//
// The bytes below a log's end offset never change in place: a truncation
// cuts only what lies past the checkpointed end (at recovery, and when a
// snapshot install reloads the state), and the bytes it rewrites are new
// files or past any end a reader was given, so the range holds what the
// log held when it was read.
type FileRange struct {
	File *os.File
	Off  int64
	Len  int
}

// Close closes the range's file.
func (r *FileRange) Close() error { return r.File.Close() }

// ReadRange is ReadWith for a caller that can send batches from the
// segment file (sendfile) rather than read them: it finds whole batches
// from the one holding offset, with base offsets below min(end,
// EndOffset()), at most maxBytes of them except that the first is whole
// however large. Under minFile bytes it reads them (into alloc's buffer,
// as ReadWith does) and returns them as data; else it returns where they
// lie. Unlike ReadWith it stops at the end of the segment holding offset
// (the next read goes on from there, as Kafka's reads do). Nothing is
// returned when offset is at or past end and at most EndOffset(). more
// reports a read that stopped at the end of its segment while maxBytes
// allowed more and a later segment holds batches below end. When no
// descriptor can be had (the process is out of them), it reads instead.
//
// As ReadWith, it never serves unverified bytes (see verify.go).
func (l *Log) ReadRange(offset int64, maxBytes int32, end int64, minFile int, alloc func(n int) []byte) (data []byte, fr *FileRange, more bool, err error) {
	for {
		var unverified *segment
		data, fr, more, unverified, err = l.readRange(offset, maxBytes, end, minFile, alloc)
		if unverified == nil {
			return data, fr, more, err
		}
		if err := l.verify(context.Background(), unverified, nil); err != nil {
			return nil, nil, false, fmt.Errorf("read offset %d: %w", offset, err)
		}
	}
}

// readRange is ReadRange, or the segment holding offset if that is
// unverified; it reads nothing then.
func (l *Log) readRange(offset int64, maxBytes int32, end int64, minFile int, alloc func(n int) []byte) (data []byte, fr *FileRange, more bool, unverified *segment, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, nil, false, nil, ErrClosed
	}
	// end before the size, as in ReadWith.
	logEnd, start := l.end.Load(), l.start.Load()
	if offset < start || offset > logEnd {
		return nil, nil, false, nil, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, start, logEnd)
	}
	end = min(end, logEnd)
	if offset >= end {
		return nil, nil, false, nil, nil
	}
	si := l.segmentFor(offset)
	seg := l.segs[si]
	if seg.unverified(offset) {
		return nil, nil, false, seg, nil
	}
	if err := l.cache.acquire(seg); err != nil {
		return nil, nil, false, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}
	defer l.cache.release(seg)
	segSize := seg.size.Load()
	hr := newHeaderReader(seg)
	defer hr.release()
	pos, firstSize, err := hr.findBatch(offset, segSize)
	if err != nil {
		return nil, nil, false, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}
	first, _, err := hr.header(pos, segSize) // in the window: findBatch read it
	if err != nil {
		return nil, nil, false, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}
	limit := min(segSize, pos+max(int64(maxBytes), firstSize))
	cut, err := hr.cutBefore(pos+firstSize, batchNext(first), limit, end)
	if err != nil {
		return nil, nil, false, nil, fmt.Errorf("read offset %d: %w", offset, err)
	}
	n := cut - pos
	more = cut == segSize && cut-pos < int64(maxBytes) && si+1 < len(l.segs) && l.segs[si+1].base < end
	var f *os.File
	if n >= int64(minFile) {
		f, err = dupFile(seg.log)
		if err != nil {
			f = nil // out of descriptors: read instead
		}
	}
	if f == nil {
		buf := allocRead(alloc, n)
		if filled := hr.cached(buf, pos); filled < len(buf) {
			if _, err := seg.log.ReadAt(buf[filled:], pos+int64(filled)); err != nil {
				return nil, nil, false, nil, fmt.Errorf("read %s at %d: %w", seg.path, pos+int64(filled), err)
			}
		}
		return buf, nil, more, nil, nil
	}
	return nil, &FileRange{File: f, Off: pos, Len: int(n)}, more, nil, nil
}

// cutBefore returns the end of the last whole batch, walking from the
// batch boundary from whose base offset is base, that ends by limit and
// starts below offset end.
func (r *headerReader) cutBefore(from, base, limit, end int64) (int64, error) {
	pos := from
	// Skip ahead through the index: its last entry below limit and below
	// end is a batch boundary past which only a few batches lie. An entry
	// that does not name the batch at its position is ignored.
	endRel := uint64(end - r.s.base)
	var e [offsetEntrySize]byte
	i, err := r.s.index.search(r.s.index.entries(), func(e []byte) bool {
		return uint64(binary.BigEndian.Uint32(e)) < endRel && int64(binary.BigEndian.Uint32(e[4:])) < limit
	}, e[:])
	if err != nil {
		return 0, err
	}
	if at, atBase := int64(binary.BigEndian.Uint32(e[4:])), r.s.base+int64(binary.BigEndian.Uint32(e[:])); i >= 0 && at > pos {
		if hdr, _, err := r.headerWithin(at, limit); err == nil && batchBase(hdr) == atBase {
			pos, base = at, atBase
		}
	}
	for pos+BatchHeaderSize <= limit && base < end {
		hdr, size, err := r.headerWithin(pos, limit)
		if err != nil {
			return 0, err
		}
		if got := batchBase(hdr); got != base {
			return 0, fmt.Errorf("%w: %s: batch at %d has base offset %d, expected %d", errCorruptSegment, r.s.path, pos, got, base)
		}
		if size < 0 {
			break // runs past limit
		}
		base = batchNext(hdr)
		pos += size
	}
	return pos, nil
}

// headerWithin is header for a batch that may run past limit (but not
// past the segment's published size): size is -1 then.
func (r *headerReader) headerWithin(pos, limit int64) ([]byte, int64, error) {
	hdr, size, err := r.header(pos, r.s.size.Load())
	if err != nil {
		return nil, 0, err
	}
	if pos+size > limit {
		return hdr, -1, nil
	}
	return hdr, size, nil
}

// dupFile returns a descriptor of its own for f's file.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("dup %s: %w", f.Name(), err)
	}
	var fd int
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = dupCloexec(int(s)) }); err != nil {
		return nil, fmt.Errorf("dup %s: %w", f.Name(), err)
	}
	if derr != nil {
		return nil, fmt.Errorf("dup %s: %w", f.Name(), derr)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
