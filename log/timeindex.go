package log

import (
	"encoding/binary"
	"fmt"
)

// timeEntrySize is the width of a time index entry: a timestamp (int64)
// and a base offset relative to the segment (uint32).
const timeEntrySize = 12

// timeIndex is a segment's time index. Each entry (ts, rel) records that ts
// is the largest batch max timestamp among the batches up to the entry's
// writing, and that rel is the relative base offset of the first batch that
// reached it. Entries are written with offset index entries when the
// timestamp has grown, and once more when the segment is sealed, so both
// columns strictly increase.
type timeIndex struct {
	*entryFile
	// The last entry, for maybeAdd; guarded by the writer lock.
	lastTs  int64 // -1 when empty
	lastRel uint32
}

// openTimeIndex opens an index file, creating it if it is missing and
// mayCreate; ok is false if the file was missing or holds a partial entry,
// and the index must be rebuilt.
func openTimeIndex(path string, mayCreate bool) (x *timeIndex, ok bool, err error) {
	e, size, existed, err := openEntryFile(path, timeEntrySize, mayCreate)
	if err != nil {
		return nil, false, err
	}
	x = &timeIndex{entryFile: e}
	if err := x.loadLast(); err != nil {
		e.close()
		return nil, false, err
	}
	return x, intact(size, existed, timeEntrySize), nil
}

func (x *timeIndex) loadLast() error {
	x.lastTs, x.lastRel = -1, 0
	if n := x.entries(); n > 0 {
		ts, rel, err := x.entry(n - 1)
		if err != nil {
			return err
		}
		x.lastTs, x.lastRel = ts, rel
	}
	return nil
}

func (x *timeIndex) entry(i int64) (ts int64, rel uint32, err error) {
	var b [timeEntrySize]byte
	if err := x.read(i, b[:]); err != nil {
		return 0, 0, err
	}
	return int64(binary.BigEndian.Uint64(b[:])), binary.BigEndian.Uint32(b[8:]), nil
}

// maybeAdd appends (ts, rel) if ts is larger than the last entry's.
// Timestamps below zero (Kafka's "no timestamp") are never indexed.
func (x *timeIndex) maybeAdd(ts int64, rel uint32) (added bool, err error) {
	if ts <= x.lastTs || ts < 0 {
		return false, nil
	}
	var b [timeEntrySize]byte
	binary.BigEndian.PutUint64(b[:], uint64(ts))
	binary.BigEndian.PutUint32(b[8:], rel)
	if err := x.append(b[:]); err != nil {
		return false, fmt.Errorf("time index: %w", err)
	}
	x.lastTs, x.lastRel = ts, rel
	return true, nil
}

// lookup returns the relative offset of the last entry whose timestamp is
// below ts: every batch up to that offset has a max timestamp below ts, so
// a search for ts can start there. found is false when no entry qualifies.
func (x *timeIndex) lookup(ts int64) (rel uint32, found bool, err error) {
	var e [timeEntrySize]byte
	i, err := x.search(x.entries(), func(e []byte) bool { return int64(binary.BigEndian.Uint64(e)) < ts }, e[:])
	if err != nil || i < 0 {
		return 0, false, err
	}
	return binary.BigEndian.Uint32(e[8:]), true, nil
}

// truncateTo drops the entries that point at batches at or past rel.
func (x *timeIndex) truncateTo(rel uint32) error {
	i, err := x.search(x.entries(), func(e []byte) bool { return binary.BigEndian.Uint32(e[8:]) < rel }, nil)
	if err != nil {
		return err
	}
	if err := x.truncate(i + 1); err != nil {
		return err
	}
	return x.loadLast()
}
