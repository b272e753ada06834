package log

import (
	"fmt"
)

// Append writes batch, a whole magic v2 record batch the caller has
// validated, at the end of the log. It rewrites the batch's base offset in
// place to the log end offset and returns it; the end offset then advances
// by lastOffsetDelta+1 and Notify waiters are woken. now is the caller's
// timestamp (unix ms) from the replicated command; it drives segment.ms
// rolling, so the log never reads the clock. Append does not fsync what it
// writes; a roll fsyncs the sealed segments that await a flush once there
// are more than maxHeldSealed of them, so that they can be closed.
//
// A new segment is rolled first when the active one is not empty and the
// batch would take it past segment.bytes, its index is full, segment.ms
// has passed since its first append, or the batch's offsets would not fit
// its relative offsets.
func (l *Log) Append(batch []byte, now int64) (baseOffset int64, err error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	if h.Length < minBatchLength || h.Size() != int64(len(batch)) || h.Magic != 2 || h.LastOffsetDelta < 0 {
		return 0, fmt.Errorf("append: %w: length %d for %d bytes, magic %d, last offset delta %d",
			ErrCorruptBatch, h.Length, len(batch), h.Magic, h.LastOffsetDelta)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	return l.appendLocked(batch, h, now)
}

// appendLocked is Append for a validated batch with header h; the caller
// holds wmu.
func (l *Log) appendLocked(batch []byte, h BatchHeader, now int64) (baseOffset int64, err error) {
	seg := l.active()
	base := l.end.Load()
	next := base + int64(h.LastOffsetDelta) + 1
	if l.shouldRoll(seg, int64(len(batch)), next, now) {
		if seg, err = l.roll(); err != nil {
			return 0, err
		}
	}
	SetBaseOffset(batch, base)
	pos := seg.size.Load()
	if _, err := seg.log.WriteAt(batch, pos); err != nil {
		return 0, fmt.Errorf("append to %s: %w", seg.path, err)
	}
	if err := seg.track(seg.rel(base), pos, int64(len(batch)), h.MaxTimestamp, l.cfg.IndexIntervalBytes); err != nil {
		return 0, fmt.Errorf("append: %w", err)
	}
	if seg.created < 0 {
		seg.created = now
	}
	seg.dirty = true
	// Whole pages only: the page the next append continues is left to
	// the checkpoint, so no append rewrites a page under writeback.
	if end := (pos + int64(len(batch))) &^ (4096 - 1); earlyWriteback && end-seg.writtenBack >= writebackBytes {
		startWriteback(seg.log, seg.writtenBack, end-seg.writtenBack)
		seg.writtenBack = end
	}
	seg.size.Store(pos + int64(len(batch)))
	seg.next.Store(next)
	l.end.Store(next)
	l.wake()
	return base, nil
}

func (l *Log) shouldRoll(seg *segment, size, next, now int64) bool {
	if seg.size.Load() == 0 {
		return false
	}
	return seg.size.Load()+size > l.cfg.SegmentBytes ||
		seg.full(l.cfg) ||
		(seg.created >= 0 && now-seg.created >= l.cfg.SegmentMs) ||
		!seg.fits(next)
}

// roll seals the active segment and starts a new one at the end offset.
// The sealed segment stays open until it is fsynced (settle).
func (l *Log) roll() (*segment, error) {
	sealed := l.active()
	if err := sealed.seal(); err != nil {
		return nil, fmt.Errorf("roll: %w", err)
	}
	seg, _, err := l.newSegmentFiles(l.end.Load(), modeCreate)
	if err != nil {
		return nil, fmt.Errorf("roll: %w", err)
	}
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	l.dirDirty = true
	if err := l.settle(sealed); err != nil {
		return nil, fmt.Errorf("roll: %w", err)
	}
	l.syncHeldSealed()
	l.logger.Debug("rolled segment", "base", seg.base)
	return seg, nil
}
