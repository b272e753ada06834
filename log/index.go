package log

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// offsetEntrySize is the width of an offset index entry: the batch's base
// offset relative to the segment (uint32) and its file position (uint32).
const offsetEntrySize = 8

// offsetIndex is a segment's sparse offset index. An entry is added for a
// batch once more than index.interval.bytes have been appended since the
// previous entry; it maps the batch's base offset to where the batch starts.
type offsetIndex struct {
	*entryFile
	last atomic.Uint64 // the last entry, rel<<32|pos; valid when entries() > 0
}

// openOffsetIndex opens an index file, creating it if it is missing and
// mayCreate; ok is false if the file was missing or holds a partial entry,
// and the index must be rebuilt.
func openOffsetIndex(path string, mayCreate bool) (x *offsetIndex, ok bool, err error) {
	e, size, existed, err := openEntryFile(path, offsetEntrySize, mayCreate)
	if err != nil {
		return nil, false, err
	}
	x = &offsetIndex{entryFile: e}
	if err := x.loadLast(); err != nil {
		e.close()
		return nil, false, err
	}
	return x, intact(size, existed, offsetEntrySize), nil
}

func (x *offsetIndex) loadLast() error {
	n := x.entries()
	if n == 0 {
		x.last.Store(0)
		return nil
	}
	rel, pos, err := x.entry(n - 1)
	if err != nil {
		return err
	}
	x.last.Store(uint64(rel)<<32 | uint64(pos))
	return nil
}

func (x *offsetIndex) entry(i int64) (rel, pos uint32, err error) {
	var b [offsetEntrySize]byte
	if err := x.read(i, b[:]); err != nil {
		return 0, 0, err
	}
	return binary.BigEndian.Uint32(b[:]), binary.BigEndian.Uint32(b[4:]), nil
}

func (x *offsetIndex) add(rel, pos uint32) error {
	var b [offsetEntrySize]byte
	binary.BigEndian.PutUint32(b[:], rel)
	binary.BigEndian.PutUint32(b[4:], pos)
	if x.entries() > 0 && x.last.Load() == uint64(rel)<<32|uint64(pos) {
		// An append retried after a failed write (a full disk) adds the
		// entry it added before.
		return nil
	}
	// Publish last before the count: a reader that sees the new last entry
	// with the old count only ever uses it for offsets at or past it.
	if _, err := x.f.WriteAt(b[:], x.entries()*offsetEntrySize); err != nil {
		return fmt.Errorf("write index %s: %w", x.path, err)
	}
	x.last.Store(uint64(rel)<<32 | uint64(pos))
	x.n.Add(1)
	return nil
}

// lookup returns the last entry whose relative offset is at most rel:
// where the batch with that relative base offset starts. found is false
// when there is none, and the search starts at the segment's beginning.
func (x *offsetIndex) lookup(rel uint32) (entryRel uint32, pos int64, found bool, err error) {
	n := x.entries()
	if n == 0 {
		return 0, 0, false, nil
	}
	if last := x.last.Load(); rel >= uint32(last>>32) {
		return uint32(last >> 32), int64(uint32(last)), true, nil
	}
	var e [offsetEntrySize]byte
	i, err := x.search(n, func(e []byte) bool { return binary.BigEndian.Uint32(e) <= rel }, e[:])
	if err != nil || i < 0 {
		return 0, 0, false, err
	}
	return binary.BigEndian.Uint32(e[:]), int64(binary.BigEndian.Uint32(e[4:])), true, nil
}

// truncateTo drops the entries for batches at or past rel.
func (x *offsetIndex) truncateTo(rel uint32) error {
	i, err := x.search(x.entries(), func(e []byte) bool { return binary.BigEndian.Uint32(e) < rel }, nil)
	if err != nil {
		return err
	}
	if err := x.truncate(i + 1); err != nil {
		return err
	}
	return x.loadLast()
}
