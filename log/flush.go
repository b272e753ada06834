package log

import "fmt"

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
