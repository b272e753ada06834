package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producerWorkload runs idempotent acks=all producers, each sending
// unique values "p<process>-<n>" to topic at a paced rate. Each send is an
// invoke, then ok with the partition and offset it was acknowledged at,
// fail, or info (see outcomeOf). Its final read is topic at
// read_uncommitted.
type producerWorkload struct {
	topic      string
	partitions int32
	producers  int
	rate       float64 // sends per second, per producer

	first    int
	stopping atomic.Bool
	loops    sync.WaitGroup
	inflight sync.WaitGroup
	clients  []*kgo.Client
}

func (w *producerWorkload) name() string { return "producers" }

func (w *producerWorkload) start(t *testing.T, c *procCluster, h *history, first int) {
	t.Helper()
	w.first = first
	logs := &logBuffer{}
	dumpOnFailure(t, "harness producers (franz-go) log", logs.String)
	for i := 0; i < w.producers; i++ {
		r := &recorder{h: h, process: first + i}
		cl := newKgo(t, c.seeds()[0],
			kgo.SeedBrokers(c.seeds()...),
			kgo.WithLogger(kgoLogger{logs}),
			kgo.DefaultProduceTopic(w.topic),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.MaxBufferedRecords(500),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.RecordDeliveryTimeout(60*time.Second),
			kgo.RetryTimeout(60*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		)
		w.clients = append(w.clients, cl)
		w.loops.Add(1)
		go func() {
			defer w.loops.Done()
			began := time.Now()
			for n := 1; !w.stopping.Load(); n++ {
				if ahead := time.Duration(float64(n)/w.rate*float64(time.Second)) - time.Since(began); ahead > 0 {
					time.Sleep(ahead)
				}
				v := fmt.Sprintf("p%d-%d", r.process, n)
				id := r.invoke(event{Op: opSend, Topic: w.topic, Partition: -1, Offset: -1, Values: []string{v}})
				w.inflight.Add(1)
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(rec *kgo.Record, err error) {
					defer w.inflight.Done()
					e := event{Op: opSend, Topic: w.topic, Partition: -1, Offset: -1, Values: []string{v}}
					if err == nil {
						e.Partition, e.Offset = rec.Partition, rec.Offset
					} else {
						e.Err = err.Error()
					}
					r.complete(id, outcomeOf(err), e)
				})
			}
		}()
	}
}

// stop ends the sends and waits for every one to be acknowledged or to
// fail (the delivery timeout bounds the wait).
func (w *producerWorkload) stop(t *testing.T) {
	t.Helper()
	w.stopping.Store(true)
	w.loops.Wait()
	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Errorf("producers: sends still in flight 3 minutes after stopping")
	}
}

func (w *producerWorkload) final(t *testing.T, c *procCluster, h *history) {
	t.Helper()
	finalRead(t, c, h, w.first, w.topic, w.partitions, false)
}
