package log

import (
	"errors"
	"fmt"
	"os"
	"slices"
)

// Flush fsyncs every file written since the last flush and records the
// recovery point, the end offset as of now, in the checkpoint. Appends
// wait while it runs; a Sync in progress finishes first.
func (l *Log) Flush() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	return l.flushLocked()
}

// flushLocked is Flush; the caller holds syncMu and wmu.
func (l *Log) flushLocked() error {
	if l.syncErr != nil {
		return l.syncErr
	}
	for _, s := range l.segs {
		if s.dirty {
			if err := s.sync(); err != nil {
				l.syncErr = fmt.Errorf("flush: %w: %w", ErrSyncFailed, err)
				return l.syncErr
			}
			l.unholdSealed(s)
		}
	}
	if l.dirDirty {
		if err := SyncDir(l.dir); err != nil {
			if !errors.Is(err, ErrSyncFailed) {
				return fmt.Errorf("flush: %w", err) // tried again next time
			}
			l.syncErr = fmt.Errorf("flush: %w", err)
			return l.syncErr
		}
		l.dirDirty = false
	}
	l.recoveryPoint = l.end.Load()
	return l.saveCheckpoint(l.checkpointNow())
}

// Sync is Flush for a caller that must not hold up appends while the disk
// works: it makes durable everything appended before it was called, then
// records the recovery point as of then. Appends, rolls and reads go on
// during the fsyncs and the checkpoint file's write; only choosing what
// to sync takes the writer's lock. A segment removed meanwhile (retention)
// needs no sync: its bytes are below the start offset. A failed sync is
// final: every later Sync, Flush and Close returns its error, and no
// recovery point is recorded again (after a failed fsync the kernel may
// have dropped the pages, so a later fsync that succeeds proves nothing).
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.wmu.Lock()
	if l.isClosed() {
		l.wmu.Unlock()
		return ErrClosed
	}
	if l.syncErr != nil {
		l.wmu.Unlock()
		return l.syncErr
	}
	end, truncations := l.end.Load(), l.truncations
	var segs []*segment
	for _, s := range l.segs {
		if s.dirty {
			// Its files stay open until the fsync below is done: the
			// writer holds a dirty segment, and this reference takes over
			// from it (unholdSealed lets a sealed one go).
			if !l.cache.pin(s) {
				// Cannot happen: a dirty segment is held open. Final, as
				// the segments already marked clean are not synced.
				l.syncErr = fmt.Errorf("sync: dirty segment %s is not open", s.path)
				l.wmu.Unlock()
				releaseAll(l.cache, segs)
				return l.syncErr
			}
			segs = append(segs, s)
			// An append from now on marks it again, for the next sync;
			// a Flush waits for this one (syncMu).
			s.dirty = false
			l.unholdSealed(s)
		}
	}
	dirDirty := l.dirDirty
	l.dirDirty = false
	l.wmu.Unlock()
	defer releaseAll(l.cache, segs)

	err := func() error {
		for _, s := range segs {
			// The reference taken above keeps the files open even if
			// retention removes the segment or Detach closes the log
			// meanwhile; an unlinked file still fsyncs.
			if err := s.syncFiles(); err != nil && !(errors.Is(err, os.ErrClosed) && l.removed(s)) {
				return fmt.Errorf("sync: %w: %w", ErrSyncFailed, err)
			}
		}
		if dirDirty {
			if err := SyncDir(l.dir); err != nil {
				return fmt.Errorf("sync: %w", err)
			}
		}
		return nil
	}()

	l.wmu.Lock()
	if err == nil && l.syncErr != nil {
		// The writer's own fsync of sealed segments (syncHeldSealed)
		// failed meanwhile: this sync proves nothing either (an fsync
		// error is reported once, to whichever fsync comes first).
		err = l.syncErr
	}
	if err != nil {
		if errors.Is(err, ErrSyncFailed) {
			l.syncErr = err
		} else if dirDirty {
			l.dirDirty = true // the directory could not be opened: next time
		}
		l.wmu.Unlock()
		return err
	}
	if l.isClosed() {
		l.wmu.Unlock()
		return ErrClosed
	}
	// A truncation meanwhile lowered the recovery point itself, and the
	// bytes synced may be gone: then the next sync records it.
	if l.truncations == truncations && end > l.recoveryPoint {
		l.recoveryPoint = end
	}
	c := l.checkpointNow()
	// The file is written outside the writer's lock; ckMu keeps a later
	// checkpoint (an AdvanceStartOffset under wmu) from being overwritten
	// by this older one: it is taken before wmu is released.
	l.ckMu.Lock()
	l.wmu.Unlock()
	defer l.ckMu.Unlock()
	return l.writeCheckpointLocked(c)
}

// releaseAll drops a reference on each of segs.
func releaseAll(c *OpenCache, segs []*segment) {
	for _, s := range segs {
		c.release(s)
	}
}

// removed reports whether s is no longer one of the log's segments.
func (l *Log) removed(s *segment) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return !slices.Contains(l.segs, s)
}

// saveCheckpoint writes c if it differs from the last one written. The
// caller holds wmu.
func (l *Log) saveCheckpoint(c checkpoint) error {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	return l.writeCheckpointLocked(c)
}

// writeCheckpointLocked is saveCheckpoint with ckMu held.
func (l *Log) writeCheckpointLocked(c checkpoint) error {
	if c.equal(l.saved) {
		return nil
	}
	if err := writeCheckpoint(l.dir, c); err != nil {
		return err
	}
	l.saved = c
	return nil
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
