package log

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
)

// filesPerSegment is what an open segment costs: its .log, .index and
// .timeindex files.
const filesPerSegment = 3

// minOpenFiles is the smallest default capacity, whatever the limit.
const minOpenFiles = 64

// OpenCache bounds the files that sealed segments keep open. Every log
// opened through a cache (Open uses DefaultOpenCache) registers its
// segments with it. A segment is referenced while something uses its
// files: the writer holds the active segment, and each sealed segment
// written since the last Flush or Sync (dirty), so that no segment is ever
// closed before it is fsynced; a read holds the segments it reads, and a
// Sync those it fsyncs. An unreferenced open segment is idle; the cache
// keeps at most Capacity files' worth of idle segments and closes the least
// recently used beyond that. A read of a closed segment opens it again.
//
// So the files a process keeps open for its logs are the idle ones, at
// most Capacity, plus the ones in use: an active segment per log, the
// segments sealed since the last flush (a log fsyncs them early when they
// reach maxHeldSealed), and those of the reads in progress.
type OpenCache struct {
	logger *slog.Logger

	mu      sync.Mutex
	maxIdle int      // idle segments kept open
	head    *segment // the idle list, most recently used first
	tail    *segment
	idle    int // segments on the idle list
	open    int // segments with open files, idle or not

	// held counts the segments writers hold open (active and dirty), of
	// every log: they are outside the idle bound, so rolls fsync their
	// sealed ones early once there are more than maxIdle (syncHeldSealed).
	held atomic.Int64

	opens     atomic.Uint64 // closed segments opened again
	evictions atomic.Uint64 // idle segments closed for room
	limitHits atomic.Uint64 // opens that met EMFILE or ENFILE
	warned    atomic.Bool
}

// NewOpenCache returns a cache that keeps at most maxFiles files of idle
// segments open; maxFiles of zero or less means DefaultOpenFiles().
func NewOpenCache(maxFiles int) *OpenCache {
	c := &OpenCache{logger: slog.Default()}
	c.SetCapacity(maxFiles)
	return c
}

var defaultCache = sync.OnceValue(func() *OpenCache { return NewOpenCache(0) })

// DefaultOpenCache is the cache Open uses, shared by every log of the
// process, so that the bound holds however many partitions it opens. Its
// capacity is DefaultOpenFiles() as of its first use.
func DefaultOpenCache() *OpenCache { return defaultCache() }

// DefaultOpenFiles is a quarter of the soft limit on open files
// (RLIMIT_NOFILE), and at least 64: the rest of the limit is left to
// connections, the active segments, the files handed to sendfile, raft's
// log and the state database.
// It is at most maxDefaultOpenFiles: Go raises the soft limit to the hard
// one at start, and a hard limit of "infinity" would leave the cache
// unbounded.
func DefaultOpenFiles() int {
	return max(minOpenFiles, min(softFileLimit()/4, maxDefaultOpenFiles))
}

const maxDefaultOpenFiles = 1 << 16

// SetCapacity changes how many files of idle segments the cache keeps
// open (zero or less: DefaultOpenFiles()), closing the least recently used
// beyond it.
func (c *OpenCache) SetCapacity(maxFiles int) {
	if maxFiles <= 0 {
		maxFiles = DefaultOpenFiles()
	}
	c.mu.Lock()
	c.maxIdle = max(1, maxFiles/filesPerSegment)
	victims := c.trimLocked(c.maxIdle)
	c.mu.Unlock()
	c.closeAll(victims)
}

// Open opens the log in dir (see the package function Open) with its
// segments' files bounded by c.
func (c *OpenCache) Open(dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	return open(c, dir, cfg, logger)
}

// OpenCacheStats describes a cache at one moment, and counts since its
// creation.
type OpenCacheStats struct {
	Capacity     int    // files of idle segments kept open at most
	OpenSegments int    // segments with open files, in use or idle
	IdleSegments int    // open segments nothing uses
	Opens        uint64 // sealed segments opened again after being closed
	Evictions    uint64 // idle segments closed to stay within Capacity
	LimitHits    uint64 // opens that found the process out of descriptors
}

// heldOver reports whether writers hold more segments open than the cache
// keeps idle ones (and more than minHeldBudget, so that a small cache does
// not make every roll fsync).
func (c *OpenCache) heldOver() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held.Load() > int64(max(c.maxIdle, minHeldBudget))
}

const minHeldBudget = 64

// Stats returns the cache's current state and counters.
func (c *OpenCache) Stats() OpenCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return OpenCacheStats{
		Capacity:     c.maxIdle * filesPerSegment,
		OpenSegments: c.open,
		IdleSegments: c.idle,
		Opens:        c.opens.Load(),
		Evictions:    c.evictions.Load(),
		LimitHits:    c.limitHits.Load(),
	}
}

// errSegmentGone reports a segment whose log removed or closed it.
var errSegmentGone = errors.New("segment removed")

// install registers a segment whose files the writer has just opened,
// with one reference: the caller's.
func (c *OpenCache) install(s *segment, f *segFiles) {
	c.mu.Lock()
	s.segFiles = f
	s.refs = 1
	c.open++
	c.mu.Unlock()
}

// acquire makes sure s's files are open and keeps them open until the
// matching release. A segment closed earlier is opened again; if the
// process is out of descriptors, idle segments are closed and the open
// tried once more before the error is returned.
func (c *OpenCache) acquire(s *segment) error {
	if c.pin(s) {
		return nil
	}
	// One open per segment at a time; others wait for it and share it.
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if c.pin(s) {
		return nil
	}
	c.mu.Lock()
	gone := s.gone
	c.mu.Unlock()
	if gone {
		return fmt.Errorf("%w: %s", errSegmentGone, s.path)
	}
	f, err := c.openFiles(func() (*segFiles, error) { return s.reopen() })
	if err != nil {
		return err
	}
	c.mu.Lock()
	if s.gone {
		c.mu.Unlock()
		c.closeAll([]*segFiles{f})
		return fmt.Errorf("%w: %s", errSegmentGone, s.path)
	}
	s.segFiles = f
	s.refs = 1
	c.open++
	c.mu.Unlock()
	c.opens.Add(1)
	return nil
}

// pin adds a reference to s if its files are open.
func (c *OpenCache) pin(s *segment) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.segFiles == nil {
		return false
	}
	if s.refs == 0 {
		c.unlinkLocked(s)
	}
	s.refs++
	return true
}

// release drops a reference. The last one makes the segment idle (most
// recently used), or closes it if its log no longer has it.
func (c *OpenCache) release(s *segment) {
	c.mu.Lock()
	s.refs--
	var victims []*segFiles
	switch {
	case s.refs > 0:
	case s.gone:
		victims = append(victims, s.segFiles)
		s.segFiles = nil
		c.open--
	default:
		c.pushLocked(s)
		victims = c.trimLocked(c.maxIdle)
	}
	c.mu.Unlock()
	c.closeAll(victims)
}

// retire takes s out of use for good (its log removed or closed it),
// dropping the writer's reference if it held one. Its files are closed now
// if nothing else holds them, and the close error returned; else by the
// last release.
func (c *OpenCache) retire(s *segment, held bool) error {
	c.mu.Lock()
	s.gone = true
	if held {
		s.refs--
	}
	if s.refs > 0 || s.segFiles == nil {
		c.mu.Unlock()
		return nil
	}
	c.unlinkLocked(s)
	f := s.segFiles
	s.segFiles = nil
	c.open--
	c.mu.Unlock()
	return f.close(s.path)
}

// openFiles runs open, and when the process is out of descriptors closes
// half the idle segments (at least one) and runs it once more.
func (c *OpenCache) openFiles(open func() (*segFiles, error)) (*segFiles, error) {
	f, err := open()
	if !isFileLimit(err) {
		return f, err
	}
	c.limitHits.Add(1)
	c.mu.Lock()
	victims := c.trimLocked(c.idle / 2)
	c.mu.Unlock()
	if !c.warned.Swap(true) {
		c.logger.Warn("out of file descriptors opening a segment; closing idle segments and trying again",
			"closing", len(victims), "err", err)
	}
	c.closeAll(victims)
	if f, err = open(); isFileLimit(err) {
		c.limitHits.Add(1)
	}
	return f, err
}

// isFileLimit reports an error from the process or system limit on open files.
func isFileLimit(err error) bool {
	return err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE))
}

// trimLocked takes idle segments off the list, least recently used first,
// until at most keep remain, and returns their files for closeAll.
func (c *OpenCache) trimLocked(keep int) []*segFiles {
	var victims []*segFiles
	for c.idle > keep {
		s := c.tail
		c.unlinkLocked(s)
		victims = append(victims, s.segFiles)
		s.segFiles = nil
		c.open--
	}
	c.evictions.Add(uint64(len(victims)))
	return victims
}

// closeAll closes files taken from segments outside the lock. They are
// clean (only fsynced segments become idle), so a failure loses nothing;
// it is logged.
func (c *OpenCache) closeAll(fs []*segFiles) {
	for _, f := range fs {
		if err := f.close(f.log.Name()); err != nil {
			c.logger.Warn("closing an idle segment", "err", err)
		}
	}
}

// pushLocked puts s at the front of the idle list.
func (c *OpenCache) pushLocked(s *segment) {
	s.lruPrev, s.lruNext, s.idle = nil, c.head, true
	if c.head != nil {
		c.head.lruPrev = s
	} else {
		c.tail = s
	}
	c.head = s
	c.idle++
}

// unlinkLocked takes s off the idle list if it is there.
func (c *OpenCache) unlinkLocked(s *segment) {
	if !s.idle {
		return
	}
	if s.lruPrev != nil {
		s.lruPrev.lruNext = s.lruNext
	} else {
		c.head = s.lruNext
	}
	if s.lruNext != nil {
		s.lruNext.lruPrev = s.lruPrev
	} else {
		c.tail = s.lruPrev
	}
	s.lruPrev, s.lruNext, s.idle = nil, nil, false
	c.idle--
}
