package log

import "fmt"

// maxHeldSealed is how many sealed, not yet fsynced segments a log keeps
// open before the writer fsyncs them itself instead of waiting for the next
// Flush or Sync: a dirty segment cannot be closed (only an fsync through
// its own descriptor reports the writeback errors of its pages), so with a
// tiny segment.bytes and many rolls between checkpoints they would
// otherwise hold a descriptor each without bound.
const maxHeldSealed = 32

// The writer references the active segment and every dirty one, so the
// cache never closes them; hold, unhold and settle keep that reference.
// All three run under wmu.

// hold gives the writer a reference on s, opening its files if needed.
func (l *Log) hold(s *segment) error {
	if s.held {
		return nil
	}
	if err := l.cache.acquire(s); err != nil {
		return err
	}
	s.held = true
	l.cache.held.Add(1)
	return nil
}

// unhold drops the writer's reference on s, if it has one.
func (l *Log) unhold(s *segment) {
	if s.held {
		s.held = false
		l.cache.held.Add(-1)
		l.cache.release(s)
	}
}

// settle holds s while it is the active segment or dirty and lets the cache
// have it otherwise.
func (l *Log) settle(s *segment) error {
	if s.dirty || (len(l.segs) > 0 && s == l.active()) {
		return l.hold(s)
	}
	l.unhold(s)
	return nil
}

// unholdSealed lets the cache have s if it is sealed and clean.
func (l *Log) unholdSealed(s *segment) {
	if !s.dirty && s != l.active() {
		l.unhold(s)
	}
}

// dropSegment takes s out of use for good: its log removed or closed it.
func (l *Log) dropSegment(s *segment) error {
	held := s.held
	s.held = false
	if held {
		l.cache.held.Add(-1)
	}
	return l.cache.retire(s, held)
}

// syncHeldSealed fsyncs the sealed segments the writer holds once there
// are more than maxHeldSealed of them, or once the writers of all logs
// hold more segments than the cache keeps idle ones (many partitions
// rolling between checkpoints), and lets the cache have them. They
// are the run of segments just before the active one: every Flush and
// Sync leaves no sealed segment dirty, and only rolls seal new ones. A
// failure is final, as one in Sync: the next Flush or Sync returns it.
func (l *Log) syncHeldSealed() {
	if l.syncErr != nil {
		return
	}
	last := len(l.segs) - 1 // the active segment
	first := last
	for first > 0 && l.segs[first-1].held {
		first--
	}
	if last == first || (last-first <= maxHeldSealed && !l.cache.heldOver()) {
		return
	}
	for _, s := range l.segs[first:last] {
		if err := s.sync(); err != nil {
			l.syncErr = fmt.Errorf("sync sealed segment: %w: %w", ErrSyncFailed, err)
			l.logger.Error("fsync of a sealed segment failed; the log can no longer be flushed", "segment", s.path, "err", err)
			return
		}
		l.unhold(s)
	}
}

// newSegmentFiles opens the files of the segment at base (mode modeCreate
// or modeRecover) and returns it registered with the cache and held by the
// writer. indexesOK is as for openSegFiles.
func (l *Log) newSegmentFiles(base int64, mode openMode) (s *segment, indexesOK bool, err error) {
	f, err := l.cache.openFiles(func() (*segFiles, error) {
		f, ok, err := openSegFiles(l.dir, base, mode)
		indexesOK = ok
		return f, err
	})
	if err != nil {
		return nil, false, err
	}
	s = newSegment(l.dir, base)
	l.cache.install(s, f)
	s.held = true
	l.cache.held.Add(1)
	return s, indexesOK, nil
}
