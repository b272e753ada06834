package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// assignWorkload runs consumers that assign themselves every partition of
// topic (kgo.ConsumePartitions, no group) from the start and poll until
// stopped, recording each poll per partition. readCommitted picks the
// isolation level; with final set, the workload's final read is topic at
// that isolation level (the read_committed reader on the copiers' output
// owns that topic's final read), otherwise it reads nothing at the end:
// the topic's writer does.
type assignWorkload struct {
	label         string
	topic         string
	partitions    int32
	consumers     int
	readCommitted bool
	finalReads    bool

	first    int
	stopping atomic.Bool
	wg       sync.WaitGroup
}

func (w *assignWorkload) name() string { return w.label }

func (w *assignWorkload) start(t *testing.T, c *procCluster, h *history, first int) {
	t.Helper()
	w.first = first
	logs := &logBuffer{}
	dumpOnFailure(t, "harness "+w.label+" (franz-go) log", logs.String)
	iso := kgo.ReadUncommitted()
	if w.readCommitted {
		iso = kgo.ReadCommitted()
	}
	for i := 0; i < w.consumers; i++ {
		r := &recorder{h: h, process: first + i}
		cl := newKgo(t, c.seeds()[0],
			kgo.SeedBrokers(c.seeds()...),
			kgo.WithLogger(kgoLogger{logs}),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: atStart(w.partitions)}),
			kgo.FetchIsolationLevel(iso),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.RetryTimeout(60*time.Second),
		)
		// The topics are new: their log starts at 0.
		for p := int32(0); p < w.partitions; p++ {
			r.seek(w.topic, p, 0)
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for !w.stopping.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				began := time.Now()
				fs := cl.PollFetches(ctx)
				cancel()
				r.polled(began, fs, w.readCommitted)
			}
		}()
	}
}

func (w *assignWorkload) stop(t *testing.T) {
	w.stopping.Store(true)
	w.wg.Wait()
}

func (w *assignWorkload) final(t *testing.T, c *procCluster, h *history) {
	t.Helper()
	if w.finalReads {
		finalRead(t, c, h, w.first, w.topic, w.partitions, w.readCommitted)
	}
}
