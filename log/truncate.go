package log

import (
	"errors"
	"fmt"
	"math"
)

// Truncate drops every batch at or past endOffset, which must be the base
// offset of a batch or the current EndOffset (a no-op). The FSM uses it on
// restart to cut what was appended after its last checkpoint. A segment
// starting exactly at endOffset is kept, empty, as the active segment; later
// segments are deleted.
//
// An endOffset below the log start offset empties the log and restarts it
// at endOffset, start offset included.
func (l *Log) Truncate(endOffset int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	end := l.end.Load()
	switch {
	case endOffset > end:
		return fmt.Errorf("truncate: %w: %d past end offset %d", ErrOffsetOutOfRange, endOffset, end)
	case endOffset == end:
		return nil
	case endOffset < 0:
		return fmt.Errorf("truncate: %w: %d", ErrOffsetOutOfRange, endOffset)
	}
	l.truncations++
	l.rewrites.Add(1) // before any byte changes (verify.go)
	if endOffset < l.start.Load() {
		return l.truncateFully(endOffset)
	}

	i := l.segmentFor(endOffset)
	seg := l.segs[i]
	if err := l.cache.acquire(seg); err != nil {
		return fmt.Errorf("truncate to %d: %w", endOffset, err)
	}
	defer l.cache.release(seg)
	pos, err := l.boundary(seg, endOffset)
	if err != nil {
		return fmt.Errorf("truncate to %d: %w", endOffset, err)
	}
	// Lower the recovery point on disk before cutting, so a crash in
	// between cannot make Open trust bytes that are gone (nor restore the
	// created time of a segment emptied or removed here).
	if endOffset < l.recoveryPoint {
		l.recoveryPoint = endOffset
		if err := l.saveCheckpoint(l.checkpointNow()); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
	}
	l.mu.Lock()
	seg.rewritten(endOffset)
	err = seg.truncateAt(pos, endOffset)
	if err == nil {
		_, err = seg.restore(pos, math.MaxInt64, l.cfg.IndexIntervalBytes)
		if errors.Is(err, errIndexMismatch) {
			l.logger.Warn("rebuilding index of segment", "segment", seg.path, "err", err)
			_, err = l.rebuild(seg, pos, math.MaxInt64)
		}
		if endOffset == seg.base {
			seg.created = -1
		}
	}
	l.end.Store(seg.next.Load())
	l.mu.Unlock()
	if herr := l.settle(seg); err == nil { // dirty: the writer holds it
		err = herr
	}
	if err != nil {
		return fmt.Errorf("truncate to %d: %w", endOffset, err)
	}
	if err := l.removeSegments(i+1, len(l.segs), 0); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	if err := l.settle(seg); err != nil { // the active segment now
		return fmt.Errorf("truncate: %w", err)
	}
	l.logger.Info("truncated log", "end_offset", endOffset, "previous_end", end)
	return nil
}

// boundary returns the position of the batch starting at off in seg.
func (l *Log) boundary(seg *segment, off int64) (int64, error) {
	if off == seg.base {
		return 0, nil
	}
	limit := seg.size.Load()
	hr := newHeaderReader(seg)
	defer hr.release()
	pos, _, err := hr.findBatch(off, limit)
	if err != nil {
		return 0, err
	}
	hdr, _, err := hr.header(pos, limit)
	if err != nil {
		return 0, err
	}
	if base := batchBase(hdr); base != off {
		return 0, fmt.Errorf("%w: %d lies inside the batch at %d", ErrNotBatchBoundary, off, base)
	}
	return pos, nil
}

// truncateFully replaces the whole log with an empty one starting at off.
func (l *Log) truncateFully(off int64) error {
	l.recoveryPoint = min(l.recoveryPoint, off)
	c := l.checkpointNow()
	c.StartOffset = off
	c.Created = nil // every segment goes
	if err := l.saveCheckpoint(c); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	seg, _, err := l.newSegmentFiles(off, modeCreate)
	if err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	l.mu.Lock()
	old := l.segs
	l.segs = []*segment{seg}
	l.start.Store(off)
	l.end.Store(off)
	l.mu.Unlock()
	l.dirDirty = true
	var errs []error
	for _, s := range old {
		if s.base != off { // a segment at off was just recreated in place
			errs = append(errs, l.removeSegment(s))
		} else {
			errs = append(errs, l.dropSegment(s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	l.logger.Info("truncated log fully", "start_offset", off)
	return nil
}
