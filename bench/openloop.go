package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openLoop sends records at a fixed rate whatever the acknowledgements
// (go run ./bench -rate N): latency is measured from each record's
// scheduled send time, so a stalled broker shows as latency instead of
// slowing the sender down (no coordinated omission). It measures the
// time to the producer's acknowledgement (acks=all) and to a consumer's
// receipt of the record.
type openLoop struct {
	valueSize int
	opts      Options
}

func (w *openLoop) Name() string { return fmt.Sprintf("open-loop-%d", w.valueSize) }

// OpenLoop is what an open-loop run measured.
type OpenLoop struct {
	Rate     int           `json:"rate"`
	Sent     int64         `json:"sent"`
	Acked    int64         `json:"acked"`
	Received int64         `json:"received"`
	Errors   int64         `json:"errors"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Ack      Latencies     `json:"ack"`
	E2E      Latencies     `json:"end_to_end"`
	// ServerCPU is the server process's CPU time over the run, when known.
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
}

// Latencies is a latency distribution's percentiles.
type Latencies struct {
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
}

func latencies(d []time.Duration) Latencies {
	sortDurations(d)
	return Latencies{P50: percentile(d, 50), P99: percentile(d, 99), P999: percentile(d, 99.9), Max: percentile(d, 100)}
}

// unset marks a latency not measured (yet).
const unset = time.Duration(-1)

func (w *openLoop) Run(ctx context.Context, addr string) (Result, error) {
	o := w.opts
	seeds := strings.Split(addr, ",")
	topic := fmt.Sprintf("bench-open-loop-%d", time.Now().UnixNano())
	if err := createTopic(ctx, seeds, topic, o); err != nil {
		return Result{}, err
	}
	defer deleteTopic(seeds, topic, o)
	comp, err := codec(o.Compression)
	if err != nil {
		return Result{}, err
	}
	total := int(float64(o.Rate) * o.Duration.Seconds())
	if o.Records > 0 {
		total = int(o.Records)
	}
	if total < 1 {
		return Result{}, fmt.Errorf("-rate %d for %s sends nothing", o.Rate, o.Duration)
	}
	prod, err := kgo.NewClient(append(clientOpts(seeds, o),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(o.Linger),
		kgo.ProducerBatchCompression(comp),
		kgo.MaxBufferedRecords(max(10000, o.Rate)),
	)...)
	if err != nil {
		return Result{}, fmt.Errorf("producer client: %w", err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(append(clientOpts(seeds, o),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		return Result{}, fmt.Errorf("consumer client: %w", err)
	}
	defer cons.Close()
	// Warm up both clients: metadata, connections, the producer id.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil { // under 8 bytes: not a sequence number
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}

	// Record i is due at sched(i) after start.
	sched := func(i uint64) time.Duration {
		return time.Duration(float64(i) * float64(time.Second) / float64(o.Rate))
	}
	ack := make([]time.Duration, total)
	e2e := make([]time.Duration, total)
	for i := range ack {
		ack[i], e2e[i] = unset, unset
	}
	var acked, received, errs atomic.Int64
	var start time.Time
	started := make(chan struct{})

	// The consumer records when each value's sequence number arrives.
	consumed := make(chan error, 1)
	go func() {
		<-started
		for received.Load() < int64(total) {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				consumed <- err
				return
			}
			now := time.Since(start)
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < 8 {
					return // the warm-up record
				}
				seq := binary.BigEndian.Uint64(r.Value)
				if seq < uint64(total) && e2e[seq] == unset {
					e2e[seq] = now - sched(seq)
					received.Add(1)
				}
			})
		}
		consumed <- nil
	}()

	var mu sync.Mutex // guards ack against the promise goroutine's writes racing the final read
	value := make([]byte, max(8, w.valueSize))
	cpu0, _ := serverCPU(ctx)
	start = time.Now()
	close(started)
	for i := 0; i < total; {
		// Send every record due by now, then sleep a little: at most a
		// millisecond's worth go out together.
		due := min(total, int(float64(time.Since(start))*float64(o.Rate)/float64(time.Second))+1)
		for ; i < due; i++ {
			v := make([]byte, len(value))
			binary.BigEndian.PutUint64(v, uint64(i))
			seq := i
			prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				now := time.Since(start)
				if err != nil {
					errs.Add(1)
					return
				}
				mu.Lock()
				ack[seq] = now - sched(uint64(seq))
				mu.Unlock()
				acked.Add(1)
			})
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := prod.Flush(ctx); err != nil {
		return Result{}, fmt.Errorf("flush: %w", err)
	}
	select {
	case err := <-consumed:
		if err != nil {
			return Result{}, fmt.Errorf("consume: %w", err)
		}
	case <-ctx.Done():
		return Result{}, fmt.Errorf("consume: %d of %d records: %w", received.Load(), total, ctx.Err())
	}
	elapsed := time.Since(start)
	cpu1, cpuOK := serverCPU(ctx)
	res := OpenLoop{Rate: o.Rate, Sent: int64(total), Acked: acked.Load(), Received: received.Load(), Errors: errs.Load(), Elapsed: elapsed}
	if cpuOK {
		res.ServerCPU = cpu1 - cpu0
	}
	mu.Lock()
	res.Ack = latencies(measured(ack))
	mu.Unlock()
	res.E2E = latencies(measured(e2e))
	return Result{OpenLoop: &res}, nil
}

// measured drops the latencies never measured.
func measured(d []time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(d))
	for _, x := range d {
		if x != unset {
			out = append(out, x)
		}
	}
	return out
}

// printOpenLoop prints the open-loop runs.
func printOpenLoop(w io.Writer, runs []Run) {
	fmt.Fprintf(w, "%-16s %-8s %4s %8s %9s %9s %9s %9s %9s %9s %9s %9s %7s %9s\n", "workload", "target", "run", "rate/s",
		"ack p50", "ack p99", "ack p999", "ack max", "e2e p50", "e2e p99", "e2e p999", "e2e max", "unacked", "srv CPU s")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
	for _, r := range runs {
		l := r.OpenLoop
		if l == nil {
			continue
		}
		fmt.Fprintf(w, "%-16s %-8s %4d %8d %9s %9s %9s %9s %9s %9s %9s %9s %7d %9.2f\n", r.Workload, r.Target, r.N,
			int(float64(l.Sent)/l.Elapsed.Seconds()), ms(l.Ack.P50), ms(l.Ack.P99), ms(l.Ack.P999), ms(l.Ack.Max),
			ms(l.E2E.P50), ms(l.E2E.P99), ms(l.E2E.P999), ms(l.E2E.Max), l.Sent-l.Acked, l.ServerCPU.Seconds())
	}
}
