package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Requests summarizes the Kafka requests of one key that a client sent
// during a phase, as franz-go saw them: from the start of the write to the
// end of reading the response (BrokerE2E). It tells broker time apart from
// client-side queueing.
type Requests struct {
	Count     int64         `json:"count"`
	BytesOut  int64         `json:"bytes_written"`
	BytesIn   int64         `json:"bytes_read"`
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	TotalTime time.Duration `json:"total_ns"`
}

// reqHook records the round trips of one API key once on is set.
type reqHook struct {
	key int16
	on  atomic.Bool
	mu  sync.Mutex
	d   []time.Duration
	r   Requests
}

var _ kgo.HookBrokerE2E = (*reqHook)(nil)

func (h *reqHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != h.key || !h.on.Load() || e.Err() != nil {
		return
	}
	d := e.DurationE2E()
	h.mu.Lock()
	h.d = append(h.d, d)
	h.r.Count++
	h.r.BytesOut += int64(e.BytesWritten)
	h.r.BytesIn += int64(e.BytesRead)
	h.r.TotalTime += d
	h.mu.Unlock()
}

// summary stops recording and returns what was recorded.
func (h *reqHook) summary() Requests {
	h.on.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	sortDurations(h.d)
	r := h.r
	r.P50, r.P99 = percentile(h.d, 50), percentile(h.d, 99)
	return r
}
