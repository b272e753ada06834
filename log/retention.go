package log

import (
	"fmt"
	"math"
)

// ApplyRetention deletes the oldest segments while retention.ms or
// retention.bytes says so: a segment goes if its max timestamp is older
// than now - retention.ms, or if the log would still hold at least
// retention.bytes without it. Deletion stops at the first segment that
// stays and never takes the active segment. now is the caller's timestamp
// from the replicated command, never the clock. The start offset moves to
// the first remaining segment if it was below it.
//
// A segment whose batches carry no timestamp (max timestamp -1) counts as
// older than any retention.ms.
func (l *Log) ApplyRetention(now int64) (deletedSegments int, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	cfg := l.cfg
	cutoff := int64(math.MinInt64)
	if cfg.RetentionMs >= 0 && now >= math.MinInt64+cfg.RetentionMs {
		cutoff = now - cfg.RetentionMs
	}
	var total int64
	for _, s := range l.segs {
		total += s.size.Load()
	}
	n := 0
	for ; n < len(l.segs)-1; n++ {
		s := l.segs[n]
		byTime := cfg.RetentionMs >= 0 && s.maxTs.Load() < cutoff
		bySize := cfg.RetentionBytes >= 0 && total-s.size.Load() >= cfg.RetentionBytes
		if !byTime && !bySize {
			break
		}
		total -= s.size.Load()
	}
	if n == 0 {
		return 0, nil
	}
	newStart := l.segs[n].base
	l.logger.Info("retention deleting segments", "segments", n, "new_start", newStart)
	if err := l.removeSegments(0, n, newStart); err != nil {
		return n, fmt.Errorf("retention: %w", err)
	}
	return n, nil
}

// AdvanceStartOffset raises the log start offset to off (DeleteRecords) and
// deletes the segments that lie wholly below it. off may fall inside a
// segment or a batch; it is persisted in the checkpoint before anything is
// deleted. An off at or below the current start offset changes nothing; an
// off past EndOffset returns ErrOffsetOutOfRange.
func (l *Log) AdvanceStartOffset(off int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	if end := l.end.Load(); off > end {
		return fmt.Errorf("advance start offset: %w: %d past end offset %d", ErrOffsetOutOfRange, off, end)
	}
	if off <= l.start.Load() {
		return nil
	}
	c := l.checkpointNow()
	c.StartOffset = off
	if err := l.saveCheckpoint(c); err != nil {
		return fmt.Errorf("advance start offset: %w", err)
	}
	l.start.Store(off)
	n := 0
	for n < len(l.segs)-1 && l.segs[n].next.Load() <= off {
		n++
	}
	if err := l.removeSegments(0, n, off); err != nil {
		return fmt.Errorf("advance start offset: %w", err)
	}
	return nil
}
