package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// distinctValues is how many different pre-built values a producer cycles
// through: enough that batches are not one value repeated, few enough to
// stay in cache.
const distinctValues = 64

// warmup records are produced synchronously before the clock starts, so
// that metadata, connections and the producer id are in place. They are
// counted in the total that the consume phase reads back.
const warmup = 16

// slot is one record in flight. Slots are reused: a slot goes back on the
// free list from its own promise, so at most len(slots) records are in
// flight and no record, closure or timestamp is allocated per produce.
type slot struct {
	rec   kgo.Record
	start time.Time
	lat   []time.Duration
	done  func(*kgo.Record, error)
}

// produce sends records of valueSize random bytes to topic with acks=all
// and the idempotent producer, for o.Records records or o.Duration. It
// returns the timed phase and the total records written (warm-up
// included).
func produce(ctx context.Context, seeds []string, topic string, valueSize int, o Options) (Phase, int64, error) {
	comp, err := codec(o.Compression)
	if err != nil {
		return Phase{}, 0, err
	}
	hook := &reqHook{key: apiKeyProduce}
	cl, err := kgo.NewClient(append(clientOpts(seeds, o),
		kgo.WithHooks(hook),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(o.Linger),
		kgo.ProducerBatchCompression(comp),
		// Room above the slot count: franz-go releases a buffered record
		// just after its promise returns, when the slot is already free.
		kgo.MaxBufferedRecords(2*o.Inflight),
	)...)
	if err != nil {
		return Phase{}, 0, fmt.Errorf("producer client: %w", err)
	}
	defer cl.Close()

	values := make([][]byte, distinctValues)
	for i := range values {
		values[i] = make([]byte, valueSize)
		rand.Read(values[i])
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var acked atomic.Int64
	go watchdog(ctx, cancel, &acked, o.Stall)
	fail := func(what string, err error) (Phase, int64, error) {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return Phase{}, 0, fmt.Errorf("%s: %w", what, err)
	}

	for i := 0; i < warmup; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: values[i%len(values)]}).FirstErr(); err != nil {
			return fail("warm-up", err)
		}
		acked.Add(1)
	}

	var (
		errOnce  sync.Once
		firstErr error
		failed   = make(chan struct{})
	)
	free := make(chan *slot, o.Inflight)
	slots := make([]slot, o.Inflight)
	for i := range slots {
		s := &slots[i]
		s.done = func(_ *kgo.Record, err error) {
			s.lat = append(s.lat, time.Since(s.start))
			if err != nil {
				errOnce.Do(func() { firstErr = err; close(failed) })
			}
			acked.Add(1)
			free <- s
		}
		free <- s
	}

	hook.on.Store(true)
	cpu0, _ := serverCPU(ctx)
	start := time.Now()
	deadline := start.Add(o.Duration)
	var n int64
loop:
	for o.Records <= 0 || n < o.Records {
		var s *slot
		select {
		case s = <-free:
		case <-failed:
			break loop
		case <-ctx.Done():
			return fail("records in flight", ctx.Err())
		}
		now := time.Now()
		if o.Records <= 0 && now.After(deadline) {
			break loop
		}
		s.rec = kgo.Record{Topic: topic, Value: values[n%distinctValues]}
		s.start = now
		cl.Produce(ctx, &s.rec, s.done)
		n++
	}
	if err := cl.Flush(ctx); err != nil {
		return fail("flush", err)
	}
	elapsed := time.Since(start)
	cpu1, cpuOK := serverCPU(ctx)
	reqs := hook.summary()
	select {
	case <-failed:
		return Phase{}, 0, firstErr
	default:
	}

	var lat []time.Duration
	for i := range slots {
		lat = append(lat, slots[i].lat...)
	}
	sortDurations(lat)
	return Phase{
		Records:  n,
		Bytes:    n * int64(valueSize),
		Elapsed:  elapsed,
		P50:      percentile(lat, 50),
		P99:      percentile(lat, 99),
		Max:      percentile(lat, 100),
		Requests: reqs,
		ServerCPU: func() time.Duration {
			if cpuOK {
				return cpu1 - cpu0
			}
			return 0
		}(),
	}, n + warmup, nil
}

// codec maps the -compression flag to a franz-go codec.
func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown compression %q", name)
}
