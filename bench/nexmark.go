package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/processor"
)

// Nexmark-style processor workloads (go run ./bench -nexmark q1,q2,q5):
// a generator of Person, Auction and Bid events at 1:3:46 with hot
// auctions, loaded into a topic, then a processor deployed from the start
// of it. Throughput is events over the wall time until the processor has
// consumed them all, and per core over the process's CPU time (brokerd
// runs in this process). The peer, measured in the same run on the same
// broker, is the same query as a client-side franz-go loop (consume,
// transform in Go, produce acks=all): what an application outside the
// broker does, at least once. Latency is measured separately at a steady
// input rate: from the input record's create time to the output record's
// arrival at a consumer.

var nexmarkQueries = map[string]string{
	"q1": `
name: q1
inputs: [IN]
output: OUT
step: {max_records: STEP}
stages:
  - filter: 'value.type == "bid"'
  - map: {value: '{"auction": value.auction, "bidder": value.bidder, "price": value.price * 0.908, "ts": value.ts}'}
`,
	"q2": `
name: q2
inputs: [IN]
output: OUT
step: {max_records: STEP}
stages:
  - filter: 'value.type == "bid" && int(value.auction) % 123 == 0'
`,
	"q5": `
name: q5
inputs: [IN]
output: OUT
step: {max_records: STEP}
stages:
  - filter: 'value.type == "bid"'
  - key_by: 'string(int(value.auction))'
  - window: {type: hopping, size: 10s, slide: 2s, time: "value.ts"}
  - aggregate: {op: count}
`,
}

// nexEvent generates event i: per 50, 1 person, 3 auctions, 46 bids; half
// of the bids go to the 10 newest auctions (hot keys). Event time runs at
// 10,000 events per second.
func nexEvent(i int, rng *rand.Rand) []byte {
	ts := int64(i) / 10
	switch j := i % 50; {
	case j == 0:
		return fmt.Appendf(nil, `{"type":"person","id":%d,"name":"p%d","city":"c%d","ts":%d}`, i/50, i/50, rng.IntN(100), ts)
	case j <= 3:
		a := (i/50)*3 + j - 1
		return fmt.Appendf(nil, `{"type":"auction","id":%d,"seller":%d,"category":%d,"initialBid":%d,"ts":%d}`, a, rng.IntN(i/50+1), rng.IntN(10), rng.IntN(1000), ts)
	default:
		auctions := (i/50)*3 + 3
		a := rng.IntN(auctions)
		if rng.IntN(2) == 0 {
			a = max(0, auctions-1-rng.IntN(10))
		}
		return fmt.Appendf(nil, `{"type":"bid","auction":%d,"bidder":%d,"price":%d,"ts":%d}`, a, rng.IntN(i/50+1), 1+rng.IntN(10000), ts)
	}
}

type nexResult struct {
	query, runner  string
	events         int
	elapsed, cpu   time.Duration
	outputs        int64
	latP50, latP99 time.Duration
	latSamples     int
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runNexmark(o Options) error {
	queries := strings.Split(o.Nexmark, ",")
	for _, q := range queries {
		if nexmarkQueries[q] == "" {
			return fmt.Errorf("-nexmark: unknown query %q (have q1, q2, q5)", q)
		}
	}
	events := int(o.Records)
	if events <= 0 {
		events = 1_000_000
	}
	m := machineInfo()
	fmt.Printf("brokerd bench -nexmark  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("machine: nproc=%d GOMAXPROCS=%d %s %s cpu=%q\n", m.NumCPU, m.GOMAXPROCS, m.GoVersion, m.OS, m.CPU)
	fmt.Printf("config:  events=%d partitions=%d step.max_records=%d\n\n", events, o.Partitions, o.StepRecords)
	var results []nexResult
	for _, q := range queries {
		for _, runner := range []string{"processor", "client-loop"} {
			if q == "q5" && runner == "client-loop" {
				continue // a windowed client loop is a program of its own; the peer covers q1 and q2
			}
			r, err := nexmarkRun(o, q, runner, events)
			if err != nil {
				return fmt.Errorf("%s %s: %w", q, runner, err)
			}
			results = append(results, r)
		}
	}
	fmt.Printf("%-6s %-12s %10s %10s %12s %14s %10s %9s %9s\n", "query", "runner", "events", "outputs", "events/s", "events/s/core", "cpu s", "lat p50", "lat p99")
	for _, r := range results {
		perCore := float64(r.events) / r.cpu.Seconds()
		lat50, lat99 := "-", "-"
		if r.latSamples > 0 {
			lat50, lat99 = r.latP50.Round(time.Millisecond).String(), r.latP99.Round(time.Millisecond).String()
		}
		fmt.Printf("%-6s %-12s %10d %10d %12.0f %14.0f %10.2f %9s %9s\n", r.query, r.runner, r.events, r.outputs,
			float64(r.events)/r.elapsed.Seconds(), perCore, r.cpu.Seconds(), lat50, lat99)
	}
	fmt.Printf("\nloadavg at end: %s\n", loadAvg())
	return nil
}

// nexmarkRun starts a fresh brokerd, loads the events and measures one
// query with one runner.
func nexmarkRun(o Options, q, runner string, events int) (nexResult, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp(o.DataDir, "brokerd-nexmark-*")
	if err != nil {
		return nexResult{}, err
	}
	defer os.RemoveAll(dir)
	cfg := node.DefaultConfig()
	cfg.DataDir, cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = dir, "127.0.0.1:0", "", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return nexResult{}, err
	}
	defer n.Close()
	addr := n.KafkaAddr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		return nexResult{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []string{"events", "out"} {
		if _, err := adm.CreateTopic(ctx, int32(o.Partitions), 1, nil, t); err != nil {
			return nexResult{}, fmt.Errorf("create %s: %w", t, err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < events; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: "events", Value: nexEvent(i, rng)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return nexResult{}, fmt.Errorf("load events: %w", err)
	}
	res := nexResult{query: q, runner: runner, events: events}
	cpu0, t0 := cpuTime(), time.Now()
	switch runner {
	case "processor":
		spec := strings.NewReplacer("IN", "events", "OUT", "out", "STEP", fmt.Sprint(o.StepRecords)).Replace(nexmarkQueries[q])
		if _, err := processor.Deploy(ctx, n.Store(), []byte(spec)); err != nil {
			return res, err
		}
		for {
			p, ok := n.Store().Processor(q)
			if ok && p.Stats.RecordsIn >= int64(events) {
				res.outputs = p.Stats.RecordsOut
				break
			}
			if time.Since(t0) > o.Timeout {
				return res, fmt.Errorf("processed %d of %d events in %s", p.Stats.RecordsIn, events, o.Timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "client-loop":
		out, err := clientLoop(ctx, addr, q, events, o.Timeout)
		if err != nil {
			return res, err
		}
		res.outputs = out
	}
	res.elapsed, res.cpu = time.Since(t0), cpuTime()-cpu0
	if q != "q5" {
		res.latP50, res.latP99, res.latSamples, err = nexLatency(ctx, n, q, runner, o)
		if err != nil {
			return res, fmt.Errorf("latency: %w", err)
		}
	}
	return res, nil
}

type nexBid struct {
	Type    string  `json:"type"`
	Auction int64   `json:"auction"`
	Bidder  int64   `json:"bidder"`
	Price   float64 `json:"price"`
	TS      int64   `json:"ts"`
}

// transform is the client loop's q1 or q2; nil when the event is dropped.
func transform(q string, v []byte) []byte {
	var b nexBid
	if json.Unmarshal(v, &b) != nil || b.Type != "bid" {
		return nil
	}
	if q == "q2" {
		if b.Auction%123 != 0 {
			return nil
		}
		return v
	}
	out, _ := json.Marshal(map[string]any{"auction": b.Auction, "bidder": b.Bidder, "price": b.Price * 0.908, "ts": b.TS})
	return out
}

// clientLoop reads events from the start and produces q's outputs (acks=all,
// idempotent) until every event is read and every output acknowledged.
func clientLoop(ctx context.Context, addr, q string, events int, timeout time.Duration) (int64, error) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("out"), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	deadline := time.Now().Add(timeout)
	read, out := 0, int64(0)
	for read < events {
		if time.Now().After(deadline) {
			return out, fmt.Errorf("read %d of %d events", read, events)
		}
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			read++
			if v := transform(q, r.Value); v != nil {
				out++
				prod.Produce(ctx, &kgo.Record{Value: v, Timestamp: r.Timestamp}, nil)
			}
		})
	}
	return out, prod.Flush(ctx)
}

// nexLatency sends bids at a steady rate for a few seconds and measures
// the time from each input record's create time to the arrival of its
// output at a consumer.
func nexLatency(ctx context.Context, n *node.Node, q, runner string, o Options) (p50, p99 time.Duration, samples int, err error) {
	addr := n.KafkaAddr()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("events"), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return 0, 0, 0, err
	}
	defer prod.Close()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if runner == "client-loop" {
		go func() { _, _ = clientLoopForever(lctx, addr, q) }()
	}
	cons.PollFetches(ctxTimeout(ctx, 200*time.Millisecond)) // join at the end before sending
	const rate, dur = 5000, 4 * time.Second
	go func() {
		rng := rand.New(rand.NewPCG(3, 4))
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for i := 0; lctx.Err() == nil && time.Duration(i)*time.Second/rate < dur; {
			<-t.C
			for k := 0; k < rate/1000; k, i = k+1, i+1 {
				auction := 123 * int64(rng.IntN(1000))
				v := fmt.Appendf(nil, `{"type":"bid","auction":%d,"bidder":1,"price":10,"ts":%d}`, auction, time.Now().UnixMilli())
				prod.Produce(lctx, &kgo.Record{Value: v, Timestamp: time.Now()}, nil)
			}
		}
	}()
	var lats []time.Duration
	end := time.Now().Add(dur + 3*time.Second)
	for time.Now().Before(end) {
		fs := cons.PollFetches(ctxTimeout(ctx, 500*time.Millisecond))
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) { lats = append(lats, now.Sub(r.Timestamp)) })
	}
	if len(lats) == 0 {
		return 0, 0, 0, fmt.Errorf("no output arrived")
	}
	slices.Sort(lats)
	return lats[len(lats)/2], lats[len(lats)*99/100], len(lats), nil
}

func ctxTimeout(ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	time.AfterFunc(d, cancel)
	return c
}

// clientLoopForever is clientLoop from the input's end until ctx ends.
func clientLoopForever(ctx context.Context, addr, q string) (int64, error) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("out"), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	var out int64
	for ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if v := transform(q, r.Value); v != nil {
				out++
				prod.Produce(ctx, &kgo.Record{Value: v, Timestamp: r.Timestamp}, nil)
			}
		})
	}
	return out, nil
}
