package log

import (
	"errors"
	"fmt"
	"os"
	"slices"
)

// Flush fsyncs every file written since the last flush and records the
// recovery point, the end offset as of now, in the checkpoint. Appends
// wait while it runs.
func (l *Log) Flush() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	for _, s := range l.segs {
		if s.dirty {
			if err := s.sync(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
		}
	}
	if l.dirDirty {
		if err := SyncDir(l.dir); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		l.dirDirty = false
	}
	l.recoveryPoint = l.end.Load()
	return l.saveCheckpoint(l.checkpointNow())
}

// checkpointNow is the checkpoint to write now: the current start offset
// and recovery point, and the created time of each segment that has one and
// starts below the recovery point. Later segments are left out: a Truncate
// at or past the recovery point writes no checkpoint, and an entry for a
// segment it removes would be applied after a crash to a new segment that
// reuses the base.
func (l *Log) checkpointNow() checkpoint {
	c := checkpoint{StartOffset: l.start.Load(), RecoveryPoint: l.recoveryPoint}
	for _, s := range l.segs {
		if s.base < l.recoveryPoint && s.created >= 0 {
			c.Created = append(c.Created, segmentCreated{Base: s.base, Created: s.created})
		}
	}
	return c
}

// saveCheckpoint writes c if it differs from the last one written.
func (l *Log) saveCheckpoint(c checkpoint) error {
	if c.equal(l.saved) {
		return nil
	}
	if err := writeCheckpoint(l.dir, c); err != nil {
		return err
	}
	l.saved = c
	return nil
}

// Sync is Flush for a caller that must not hold up appends while the disk
// works: it makes durable everything appended before it was called, then
// records the recovery point as of then. Appends, rolls and reads go on
// during the fsyncs; only choosing what to sync and writing the checkpoint
// file take the writer's lock. A segment removed meanwhile (retention)
// needs no sync: its bytes are below the start offset.
func (l *Log) Sync() error {
	l.wmu.Lock()
	if l.isClosed() {
		l.wmu.Unlock()
		return ErrClosed
	}
	end, truncations := l.end.Load(), l.truncations
	var segs []*segment
	for _, s := range l.segs {
		if s.dirty {
			segs = append(segs, s)
			// An append from now on marks it again, for the next sync.
			s.dirty = false
		}
	}
	dirDirty := l.dirDirty
	l.dirDirty = false
	l.wmu.Unlock()

	// Not marked dirty again on an error: after a failed fsync the kernel
	// may have dropped the pages, and a later sync that succeeds would
	// prove nothing. The caller must stop.
	for _, s := range segs {
		// os.File defers a Close racing with Sync until Sync returns.
		if err := s.syncFiles(); err != nil && !(errors.Is(err, os.ErrClosed) && l.removed(s)) {
			return fmt.Errorf("sync: %w", err)
		}
	}
	if dirDirty {
		if err := SyncDir(l.dir); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	// A truncation meanwhile lowered the recovery point itself, and the
	// bytes synced may be gone: then the next sync records it.
	if l.truncations == truncations && end > l.recoveryPoint {
		l.recoveryPoint = end
	}
	return l.saveCheckpoint(l.checkpointNow())
}

// removed reports whether s is no longer one of the log's segments.
func (l *Log) removed(s *segment) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return !slices.Contains(l.segs, s)
}
