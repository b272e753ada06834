package log

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
)

// Log is one partition's log: a directory of segments.
//
// One goroutine writes (Append, Truncate, AdvanceStartOffset,
// ApplyRetention); writers are serialized anyway, so Flush and SetConfig may
// come from elsewhere. Read, OffsetForTimestamp, MaxTimestampOffset and
// the accessors may be called from any number of goroutines at once.
type Log struct {
	dir    string
	logger *slog.Logger
	cache  *OpenCache // bounds the open files of sealed segments

	// syncMu orders Sync against Flush and Close: a Sync marks segments
	// clean before it fsyncs them, so they wait for it. Taken before wmu.
	syncMu sync.Mutex
	// ckMu guards saved and the checkpoint file's writes; taken after wmu
	// (Sync writes the file after releasing wmu).
	ckMu sync.Mutex

	// wmu serializes the writers and guards the fields below it.
	wmu           sync.Mutex
	cfg           Config
	recoveryPoint int64      // end offset as of the last flush
	saved         checkpoint // the checkpoint last written (guarded by ckMu)
	syncErr       error      // a failed Sync or Flush: final
	dirDirty      bool       // files created or removed since the last flush
	truncations   uint64     // Truncate calls that cut something (Sync)

	// mu guards segs (which segments exist) and closed. Writers hold wmu
	// and take mu exclusively to change them; readers hold mu shared for
	// the whole of a read, so a segment is never closed under them.
	mu     sync.RWMutex
	segs   []*segment // ascending base offset; the last is active
	closed bool

	start atomic.Int64
	end   atomic.Int64 // published after the batches below it are written

	// Verification (verify.go). rewrites counts the truncations that
	// may rewrite bytes a verification is reading; it is raised before
	// any byte changes.
	onDamage atomic.Pointer[func(error)]
	rewrites atomic.Uint64
	verified verifyCounters

	notifyCh     atomic.Pointer[chan struct{}]
	notifyWanted atomic.Bool
}

// StartOffset is the log start offset: the first offset a Read may ask for.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset is the log end offset: the offset the next appended record gets.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's current configuration (normalized).
func (l *Log) Config() Config {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.cfg
}

// SetConfig replaces the configuration; it applies from the next Append or
// ApplyRetention on. Sizes of zero or less mean Kafka's defaults.
func (l *Log) SetConfig(cfg Config) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.cfg = cfg.normalized()
}

// Size is the total size of the segments in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size.Load()
	}
	return n
}

// Segments describes the segments, oldest first; the last is active.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.info()
	}
	return out
}

// active is the segment appends go to; writers only.
func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// Close flushes the log and closes its files. Waiters on Notify are woken.
func (l *Log) Close() error { return l.close(true) }

// Detach closes the log's files without flushing them, so that its
// directory can be renamed or removed; the log cannot be used again.
func (l *Log) Detach() error { return l.close(false) }

func (l *Log) close(flush bool) error {
	if flush {
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return nil
	}
	var err error
	if flush {
		err = l.flushLocked()
	}
	l.mu.Lock()
	l.closed = true
	segs := l.segs
	l.segs = nil
	l.mu.Unlock()
	for _, s := range segs {
		err = errors.Join(err, l.dropSegment(s))
	}
	l.notifyWanted.Store(false)
	close(*l.notifyCh.Load())
	if err != nil {
		return fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return nil
}

// segmentFor returns the index of the segment holding offset: the last one
// whose base is at most offset. Callers hold mu.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// removeSegments detaches segs[from:to] under mu and deletes their files.
// Writers only.
func (l *Log) removeSegments(from, to int, newStart int64) error {
	if from >= to {
		return nil
	}
	l.mu.Lock()
	gone := append([]*segment(nil), l.segs[from:to]...)
	l.segs = append(l.segs[:from], l.segs[to:]...)
	if newStart > l.start.Load() {
		l.start.Store(newStart)
	}
	l.mu.Unlock()
	l.dirDirty = true
	var errs []error
	for _, s := range gone {
		errs = append(errs, l.removeSegment(s))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove segments: %w", err)
	}
	return nil
}

// removeSegment drops s, which its log no longer lists, and deletes its
// files. A Sync may still hold them open; unlinked, they stay readable to
// it, and the cache closes them when it lets go. Writers only.
func (l *Log) removeSegment(s *segment) error {
	return errors.Join(l.dropSegment(s), s.removeFiles())
}
