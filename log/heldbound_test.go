package log

import "testing"

// TestHeldSegmentsBoundedAcrossLogs: the sealed segments writers hold until
// they are fsynced are bounded across every log of a cache, not per log
// (50 logs rolling 32 segments each between checkpoints held 1650 segments
// open through a cache of 63 files): once writers hold more than the cache
// keeps idle (or minHeldBudget), a roll fsyncs its held run. What stays
// open is each log's active segment, the cache's idle ones, the held
// budget, and one just-sealed segment per log.
func TestHeldSegmentsBoundedAcrossLogs(t *testing.T) {
	c := NewOpenCache(64)
	const logs = 50
	for range logs {
		openCachedLog(t, c, maxHeldSealed+1) // 32 sealed dirty + active
	}
	fds := openFDs(t)
	s := c.Stats()
	t.Logf("capacity %d files; open segments %d (%d files), idle %d; process fds %d",
		s.Capacity, s.OpenSegments, s.OpenSegments*filesPerSegment, s.IdleSegments, fds)
	if max := 2*logs + s.Capacity/filesPerSegment + minHeldBudget; s.OpenSegments > max {
		t.Errorf("%d segments open through a cache of %d files for %d logs, want at most %d", s.OpenSegments, s.Capacity, logs, max)
	}
}
