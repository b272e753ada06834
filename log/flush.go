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
	active := l.active()
	c := l.checkpointNow()
	c.ActiveBase, c.ActiveCreated = active.base, active.created
	return l.saveCheckpoint(c)
}

// checkpointNow is the checkpoint to write now: the current start offset
// and recovery point, and the active segment as of the last flush.
func (l *Log) checkpointNow() checkpoint {
	c := l.saved
	c.StartOffset = l.start.Load()
	c.RecoveryPoint = l.recoveryPoint
	return c
}

// saveCheckpoint writes c if it differs from the last one written.
func (l *Log) saveCheckpoint(c checkpoint) error {
	if c == l.saved {
		return nil
	}
	if err := writeCheckpoint(l.dir, c); err != nil {
		return err
	}
	l.saved = c
	return nil
}
