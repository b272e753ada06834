package raftstore

import (
	"sync"
	"time"
)

// CheckpointBuckets are the upper bounds, in seconds, of the checkpoint
// duration histogram.
var CheckpointBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5}

// CheckpointStats is how long the FSM's checkpoints took: each one holds
// up applying entries, so its duration is a stall every writer sees.
type CheckpointStats struct {
	Count uint64
	Sum   time.Duration
	// Buckets[i] counts checkpoints of at most CheckpointBuckets[i]
	// seconds (cumulative, as Prometheus has them).
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
	t := &s.fsm.ckptTimer
	t.mu.Lock()
	defer t.mu.Unlock()
	b := make([]uint64, len(CheckpointBuckets))
	copy(b, t.buckets)
	return CheckpointStats{Count: t.count, Sum: t.sum, Buckets: b}
}
