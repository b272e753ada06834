package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentPath names a segment file by its base offset, Kafka style.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one .log file with its two indexes. Bytes are only appended,
// by the single writer; readers see size and next, which are published
// after the bytes and index entries they cover are written.
type segment struct {
	base   int64
	path   string
	log    *os.File
	index  *offsetIndex
	tindex *timeIndex

	size  atomic.Int64 // bytes of whole, published batches
	next  atomic.Int64 // offset after the last published batch
	maxTs atomic.Int64 // largest batch max timestamp; -1 if none

	// Writer state, guarded by Log.wmu.
	created         int64  // caller's now at the first append; -1 if unknown
	offOfMaxTs      uint32 // relative base offset of the batch that set maxTs
	bytesSinceIndex int64
	dirty           bool  // written since the last sync
	writtenBack     int64 // bytes whose writeback was started (startWriteback)
}

// Early writeback: every writebackBytes appended to a segment, the kernel
// is asked to start writing them to disk, so that a checkpoint's fsync
// does not find a whole checkpoint interval of dirty pages to write while
// the FSM waits for it. earlyWriteback is a variable for benchmarks.
const writebackBytes = 1 << 20

var earlyWriteback = true

// openSegment opens (creating if asked) a segment's three files. It does
// not read the log; the caller restores size, next and maxTs. indexesOK is
// false if an index file was missing or held a partial entry.
func openSegment(dir string, base int64, create bool) (s *segment, indexesOK bool, err error) {
	s = &segment{base: base, path: segmentPath(dir, base, logSuffix), created: -1}
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(s.path, flag, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open segment: %w", err)
	}
	s.log = f
	if create {
		// Stale index files for this base must not survive into a new segment.
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			if err := os.Remove(segmentPath(dir, base, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				f.Close()
				return nil, false, fmt.Errorf("remove stale index: %w", err)
			}
		}
	}
	var ok1, ok2 bool
	if s.index, ok1, err = openOffsetIndex(segmentPath(dir, base, indexSuffix)); err != nil {
		f.Close()
		return nil, false, err
	}
	if s.tindex, ok2, err = openTimeIndex(segmentPath(dir, base, timeIndexSuffix)); err != nil {
		f.Close()
		s.index.close()
		return nil, false, err
	}
	s.next.Store(base)
	s.maxTs.Store(-1)
	return s, ok1 && ok2, nil
}

// rel converts an absolute offset within the segment to a relative one.
func (s *segment) rel(off int64) uint32 { return uint32(off - s.base) }

// fits reports whether a batch ending before nextOffset can be indexed in
// this segment (relative offsets are uint32; Kafka keeps them below MaxInt32).
func (s *segment) fits(nextOffset int64) bool { return nextOffset-s.base <= math.MaxInt32 }

// track updates the writer state and indexes for a batch of size bytes at
// pos; rel is its relative base offset and batchMax its max timestamp.
// Append and index rebuilding both go through here, so a rebuilt index is
// the index the appends wrote.
func (s *segment) track(rel uint32, pos, size, batchMax int64, interval int32) error {
	maxTs, offMax := s.maxTs.Load(), s.offOfMaxTs
	if batchMax > maxTs {
		maxTs, offMax = batchMax, rel
	}
	since := s.bytesSinceIndex
	if since > int64(interval) {
		if err := s.index.add(rel, uint32(pos)); err != nil {
			return err
		}
		if _, err := s.tindex.maybeAdd(maxTs, offMax); err != nil {
			return err
		}
		since = 0
	}
	s.maxTs.Store(maxTs)
	s.offOfMaxTs = offMax
	s.bytesSinceIndex = since + size
	return nil
}

// seal records the final max timestamp in the time index, so that a
// sealed segment's max timestamp is its last time index entry.
func (s *segment) seal() error {
	added, err := s.tindex.maybeAdd(s.maxTs.Load(), s.offOfMaxTs)
	if added {
		s.dirty = true
	}
	return err
}

// full reports whether either index has reached its capacity.
func (s *segment) full(c Config) bool {
	return s.index.entries() >= c.maxOffsetEntries() || s.tindex.entries() >= c.maxTimeEntries()
}

func (s *segment) sync() error {
	if err := s.syncFiles(); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// syncFiles fsyncs the segment's three files. It does not touch the writer
// state, so it may run beside the writer (Log.Sync).
func (s *segment) syncFiles() error {
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.path, err)
	}
	if err := s.index.sync(); err != nil {
		return err
	}
	return s.tindex.sync()
}

func (s *segment) close() error {
	err := s.log.Close()
	if err != nil {
		err = fmt.Errorf("close segment %s: %w", s.path, err)
	}
	return errors.Join(err, s.index.close(), s.tindex.close())
}

// remove closes the segment and deletes its files, the log first so that
// an interrupted removal leaves only orphan indexes, which Open deletes.
func (s *segment) remove() error {
	errs := []error{s.close()}
	for _, p := range []string{s.path, s.index.path, s.tindex.path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove segment file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// truncateAt cuts the segment to its first pos bytes, which end at offset
// next, and drops the index entries past that point. The writer state is
// restored by the caller with loadState.
func (s *segment) truncateAt(pos, next int64) error {
	if err := s.log.Truncate(pos); err != nil {
		return fmt.Errorf("truncate segment %s: %w", s.path, err)
	}
	if err := s.index.truncateTo(s.rel(next)); err != nil {
		return err
	}
	if err := s.tindex.truncateTo(s.rel(next)); err != nil {
		return err
	}
	s.size.Store(pos)
	s.writtenBack = min(s.writtenBack, pos)
	s.next.Store(next)
	s.dirty = true
	return nil
}

func (s *segment) info() SegmentInfo {
	return SegmentInfo{
		BaseOffset:   s.base,
		NextOffset:   s.next.Load(),
		Size:         s.size.Load(),
		MaxTimestamp: s.maxTs.Load(),
		Created:      s.created,
		Path:         s.path,
	}
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64  // offset of the segment's first batch
	NextOffset   int64  // offset after its last batch
	Size         int64  // bytes
	MaxTimestamp int64  // largest batch max timestamp; -1 if none
	Created      int64  // the caller's time of its first append; -1 if unknown
	Path         string // the .log file
}
