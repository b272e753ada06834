package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
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
//
// The files (segFiles) are open only while the segment is referenced
// through its log's OpenCache, or idle in it: code that touches them holds
// a reference (the writer's on the active and dirty segments, acquire and
// release around a read). Everything else lives here and survives a close.
type segment struct {
	base int64
	dir  string
	path string // the .log file
	*segFiles

	size  atomic.Int64 // bytes of whole, published batches
	next  atomic.Int64 // offset after the last published batch
	maxTs atomic.Int64 // largest batch max timestamp; -1 if none

	// Writer state, guarded by Log.wmu.
	created         int64  // caller's now at the first append; -1 if unknown
	offOfMaxTs      uint32 // relative base offset of the batch that set maxTs
	bytesSinceIndex int64
	dirty           bool  // written since the last sync
	writtenBack     int64 // bytes whose writeback was started (startWriteback)
	held            bool  // the writer holds a reference (active, or dirty)

	// Verification (verify.go): the batches whose base offset is below
	// unverifiedEnd were neither written by this process nor CRC-checked
	// since Open; s.base or less means none. It only goes down.
	unverifiedEnd atomic.Int64
	verifyMu      sync.Mutex   // one verification of the segment at a time
	verifyWaiters atomic.Int32 // reads waiting for a verification
	damage        error        // what verification found (verifyMu)

	// Open-file state, guarded by the cache's mu.
	refs             int  // holders of the open files
	gone             bool // removed, or its log closed: never opened again
	idle             bool // on the cache's idle list
	lruPrev, lruNext *segment
	openMu           sync.Mutex // one open of the files at a time
}

// segFiles are a segment's open files.
type segFiles struct {
	log    *os.File
	index  *offsetIndex
	tindex *timeIndex
}

// Early writeback: every writebackBytes appended to a segment, the kernel
// is asked to start writing them to disk, so that a checkpoint's fsync
// does not find a whole checkpoint interval of dirty pages to write while
// the FSM waits for it. earlyWriteback is a variable for benchmarks.
const writebackBytes = 1 << 20

var earlyWriteback = true

// newSegment returns a segment at base with no files open; next is base
// and there is no max timestamp yet.
func newSegment(dir string, base int64) *segment {
	s := &segment{base: base, dir: dir, path: segmentPath(dir, base, logSuffix), created: -1}
	s.next.Store(base)
	s.maxTs.Store(-1)
	s.unverifiedEnd.Store(base)
	return s
}

// How openSegFiles treats missing files.
type openMode int

const (
	modeCreate  openMode = iota // a new segment: create the log, drop stale indexes
	modeRecover                 // Open: the log exists; create missing indexes
	modeReopen                  // a segment closed earlier: every file exists
)

// openSegFiles opens a segment's three files. It does not read the log.
// indexesOK is false if an index file was missing or held a partial entry.
func openSegFiles(dir string, base int64, mode openMode) (f *segFiles, indexesOK bool, err error) {
	path := segmentPath(dir, base, logSuffix)
	flag := os.O_RDWR
	if mode == modeCreate {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	lf, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open segment: %w", err)
	}
	f = &segFiles{log: lf}
	if mode == modeCreate {
		// Stale index files for this base must not survive into a new segment.
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			if err := os.Remove(segmentPath(dir, base, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				lf.Close()
				return nil, false, fmt.Errorf("remove stale index: %w", err)
			}
		}
	}
	mayCreate := mode != modeReopen
	var ok1, ok2 bool
	if f.index, ok1, err = openOffsetIndex(segmentPath(dir, base, indexSuffix), mayCreate); err != nil {
		lf.Close()
		return nil, false, err
	}
	if f.tindex, ok2, err = openTimeIndex(segmentPath(dir, base, timeIndexSuffix), mayCreate); err != nil {
		lf.Close()
		f.index.close()
		return nil, false, err
	}
	return f, ok1 && ok2, nil
}

// reopen opens the files of a sealed segment closed earlier, checking that
// the log still holds the bytes the segment had.
func (s *segment) reopen() (*segFiles, error) {
	f, _, err := openSegFiles(s.dir, s.base, modeReopen)
	if err != nil {
		return nil, err
	}
	st, err := f.log.Stat()
	if err == nil && st.Size() < s.size.Load() {
		err = fmt.Errorf("%w: %s holds %d bytes, %d expected", errCorruptSegment, s.path, st.Size(), s.size.Load())
	} else if err != nil {
		err = fmt.Errorf("stat segment: %w", err)
	}
	if err != nil {
		return nil, errors.Join(err, f.close(s.path))
	}
	return f, nil
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

// close closes the files of the segment at path.
func (f *segFiles) close(path string) error {
	err := f.log.Close()
	if err != nil {
		err = fmt.Errorf("close segment %s: %w", path, err)
	}
	return errors.Join(err, f.index.close(), f.tindex.close())
}

// removeFiles deletes the segment's files, the log first so that an
// interrupted removal leaves only orphan indexes, which Open deletes.
func (s *segment) removeFiles() error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := os.Remove(segmentPath(s.dir, s.base, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
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
