package raftstore

import (
	"sync"
	"time"
)

// CheckpointBuckets are the upper bounds, in seconds, of the checkpoint
// duration histogram.
var CheckpointBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}

// CheckpointStats is how long the FSM's checkpoints took, from capture to
// commit (they run beside apply), and in Stall how long apply waited on
// them each time (capturing, or waiting for the one in flight).
type CheckpointStats struct {
	DurationStats
	Stall DurationStats
}

// DurationStats is a histogram of durations.
type DurationStats struct {
	Count uint64
	Sum   time.Duration
	// Buckets[i] counts durations of at most CheckpointBuckets[i] seconds
	// (cumulative, as Prometheus has them).
	Buckets []uint64
}

type checkpointTimer struct {
	mu      sync.Mutex
	count   uint64
	sum     time.Duration
	buckets []uint64
}

func (t *checkpointTimer) observe(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buckets == nil {
		t.buckets = make([]uint64, len(CheckpointBuckets))
	}
	t.count++
	t.sum += d
	for i, b := range CheckpointBuckets {
		if d.Seconds() <= b {
			t.buckets[i]++
		}
	}
}

// CheckpointStats reports the checkpoints since the store opened.
func (s *Store) CheckpointStats() CheckpointStats {
	return CheckpointStats{DurationStats: s.fsm.ckptTimer.stats(), Stall: s.fsm.ckptStall.stats()}
}

func (t *checkpointTimer) stats() DurationStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := make([]uint64, len(CheckpointBuckets))
	copy(b, t.buckets)
	return DurationStats{Count: t.count, Sum: t.sum, Buckets: b}
}
