package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// These tests run the runtime against a real single-node store.

func openStore(t *testing.T) *raftstore.Store {
	t.Helper()
	s, err := raftstore.Open(raftstore.Config{NodeID: 1, DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0",
		Broker: raftstore.BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitLeader(ctx); err != nil {
		t.Fatalf("wait leader: %v", err)
	}
	return s
}

// runManager runs the processors of s until the test ends.
func runManager(t *testing.T, s *raftstore.Store) *Manager {
	t.Helper()
	m := NewManager(s, slog.New(slog.NewTextHandler(testLog(), &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

func createTopic(t *testing.T, s *raftstore.Store, name string, partitions int32, configs map[string]string) {
	t.Helper()
	if err := s.CreateTopic(context.Background(), name, topic.NewID(), partitions, configs); err != nil {
		t.Fatal(err)
	}
}

func produceRecords(t *testing.T, s *raftstore.Store, name string, partition int32, recs []log.Record) {
	t.Helper()
	for len(recs) > 0 {
		n := min(len(recs), 500)
		_, err := s.Produce(context.Background(), time.Now().UnixMilli(), []raftstore.ProduceBatch{{Topic: name, Partition: partition, Data: log.EncodeBatch(recs[:n])}})
		if err != nil {
			t.Fatalf("produce to %s-%d: %v", name, partition, err)
		}
		recs = recs[n:]
	}
}

func deploy(t *testing.T, s *raftstore.Store, spec string) {
	t.Helper()
	if _, err := Deploy(context.Background(), s, []byte(spec)); err != nil {
		t.Fatalf("deploy: %v", err)
	}
}

// readTopic returns every record of a topic.
func readTopic(t *testing.T, s *raftstore.Store, name string) []log.Record {
	t.Helper()
	tp, ok := s.Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	var out []log.Record
	for p := int32(0); p < tp.Partitions; p++ {
		l, _ := s.Log(name, p)
		for at := l.StartOffset(); at < l.EndOffset(); {
			buf, err := l.Read(at, 16<<20)
			if err != nil {
				t.Fatalf("read %s-%d at %d: %v", name, p, at, err)
			}
			for len(buf) > 0 {
				h, recs, err := log.DecodeBatch(buf)
				if err != nil {
					t.Fatalf("decode %s-%d: %v", name, p, err)
				}
				buf = buf[h.Size():]
				out = append(out, recs...)
				at = h.NextOffset()
			}
		}
	}
	return out
}

// waitIn waits until processor name has taken in records from its input
// and has no lag, and returns it.
func waitIn(t *testing.T, s *raftstore.Store, m *Manager, name string, records int64) *raftstore.ProcessorInfo {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, ok := s.Processor(name)
		if ok && p.Stats.RecordsIn >= records && Lag(s, p) == 0 {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("processor %s: %+v, status %+v; want %d records in", name, p, m.Status(name), records)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func headerOf(r log.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func init() {
	// failOnThree fails on a record whose value says count 3, for a test
	// of what a stage after an aggregate does with an error.
	Register("test-fail-on-three", func(map[string]any) (Operator, error) {
		return opFunc(func(_ State, r Record, emit func(Record)) error {
			if bytes.Contains(r.Value, []byte(`"count":3`)) {
				return errors.New("three is refused")
			}
			emit(r)
			return nil
		}), nil
	})
}

type opFunc func(State, Record, func(Record)) error

func (f opFunc) Process(st State, r Record, emit func(Record)) error { return f(st, r, emit) }

// TestErrorAfterAggregate: a stage after an aggregate that fails on what
// the aggregate emitted sends that record to the dead-letter topic; the
// step and the processor go on.
func TestErrorAfterAggregate(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 1, nil)
	deploy(t, s, `{"name":"c","inputs":["in"],"output":"out","step":{"max_records":1},
		"stages":[{"key_by":"key"},{"aggregate":{"op":"count"}},{"plugin":"test-fail-on-three"}]}`)
	var recs []log.Record
	for i := 0; i < 5; i++ {
		recs = append(recs, log.Record{Key: []byte("k"), Value: []byte("{}")})
	}
	produceRecords(t, s, "in", 0, recs)
	p := waitIn(t, s, m, "c", 5)
	if st := m.Status("c"); st.LastError != "" {
		t.Fatalf("status: %+v", st)
	}
	var got []string
	for _, r := range readTopic(t, s, "out") {
		got = append(got, string(r.Value))
	}
	if want := `{"count":1} {"count":2} {"count":4} {"count":5}`; strings.Join(got, " ") != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	dead := readTopic(t, s, "c.dlq")
	if len(dead) != 1 || string(dead[0].Value) != `{"count":3}` || !strings.Contains(headerOf(dead[0], "error"), "stage 3: three is refused") ||
		headerOf(dead[0], "source") == "" {
		t.Fatalf("dead letters: %+v", dead)
	}
	if p.Stats.DLQ != 1 || p.Stats.RecordsOut != 4 {
		t.Fatalf("stats: %+v", p.Stats)
	}
}

// TestWindowFlushSpreads: a watermark jump that closes more windows than
// one step can hold closes them over several steps, each window once.
func TestWindowFlushSpreads(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 1, nil)
	deploy(t, s, `{"name":"w","inputs":["in"],"output":"out",
		"stages":[{"key_by":"key"},{"window":{"type":"tumbling","size":"60s"}},{"aggregate":{"op":"count"}}]}`)
	const keys = 10000
	pad := strings.Repeat("k", 600) // large keys: the outputs and the state deletes outgrow a step
	var recs []log.Record
	for i := 0; i < keys; i++ {
		recs = append(recs, log.Record{Key: []byte(fmt.Sprintf("%s%05d", pad, i)), Value: []byte("{}"), Timestamp: 1000})
	}
	recs = append(recs, log.Record{Key: []byte("late-comer"), Value: []byte("{}"), Timestamp: 200_000})
	produceRecords(t, s, "in", 0, recs)
	p := waitIn(t, s, m, "w", keys+1)
	deadline := time.Now().Add(60 * time.Second)
	var out []log.Record
	for {
		if out = readTopic(t, s, "out"); len(out) >= keys || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	seen := map[string]int{}
	for _, r := range out {
		seen[string(r.Key)]++
		if string(r.Value) != `{"count":1,"window_end":60000,"window_start":0}` {
			t.Fatalf("window output %s", r.Value)
		}
	}
	if len(seen) != keys || len(out) != keys {
		t.Fatalf("%d windows emitted for %d keys, want %d once each (status %+v)", len(out), len(seen), keys, m.Status("w"))
	}
	p, _ = s.Processor("w")
	if p.Stats.Steps < 3 {
		t.Fatalf("closing %d windows took %d steps", keys, p.Stats.Steps)
	}
}

// TestIdleWindowsCloseWithoutInput: once a partition is idle, windows the
// other partitions' event times have passed are emitted with no new input.
func TestIdleWindowsCloseWithoutInput(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 2, nil)
	deploy(t, s, `{"name":"i","inputs":["in"],"output":"out","step":{"interval":"50ms"},
		"stages":[{"key_by":"key"},{"window":{"type":"tumbling","size":"10s","idle":"1s"}},{"aggregate":{"op":"count"}}]}`)
	produceRecords(t, s, "in", 1, []log.Record{{Key: []byte("b"), Value: []byte("{}"), Timestamp: 1000}})
	produceRecords(t, s, "in", 0, []log.Record{{Key: []byte("a"), Value: []byte("{}"), Timestamp: 1000},
		{Key: []byte("a"), Value: []byte("{}"), Timestamp: 50_000}})
	waitIn(t, s, m, "i", 3)
	// Partition 1 holds the watermark at 1 s until it has been idle for 1 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := readTopic(t, s, "out")
		if len(out) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("windows emitted: %d, want 2 (a and b in [0, 10s))", len(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOversizeRecord: a record whose step alone exceeds the step limit
// goes to the dead-letter topic without its value; the records around it
// are processed, and the processor does not stall.
func TestOversizeRecord(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 1, map[string]string{"max.message.bytes": "20000000"})
	deploy(t, s, `{"name":"big","inputs":["in"],"output":"out","stages":[{"map":{"value":"value + value"}}]}`)
	huge := bytes.Repeat([]byte("x"), 5<<20) // doubled by the map: over a step's 8 MiB
	produceRecords(t, s, "in", 0, []log.Record{{Value: []byte("a")}, {Key: []byte("h"), Value: huge}, {Value: []byte("b")}})
	p := waitIn(t, s, m, "big", 3)
	var got []string
	for _, r := range readTopic(t, s, "out") {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != "aa,bb" {
		t.Fatalf("output %q", got)
	}
	dead := readTopic(t, s, "big.dlq")
	if len(dead) != 1 || dead[0].Value != nil || string(dead[0].Key) != "h" || headerOf(dead[0], "source") != "in-0@1" ||
		!strings.Contains(headerOf(dead[0], "error"), "exceed") {
		t.Fatalf("dead letters: %+v", dead)
	}
	if p.Stats.DLQ != 1 || m.Status("big").LastError != "" {
		t.Fatalf("stats %+v, status %+v", p.Stats, m.Status("big"))
	}
}

func testLog() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

// TestAggregateStepHalves: a plain aggregate over many distinct long keys
// makes a step too large; the runner takes smaller steps until it fits.
func TestAggregateStepHalves(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 1, nil)
	deploy(t, s, `{"name":"c","inputs":["in"],"output":"out","stages":[{"key_by":"key"},{"aggregate":{"op":"count"}}]}`)
	var recs []log.Record
	for i := 0; i < 6000; i++ {
		recs = append(recs, log.Record{Key: []byte(fmt.Sprintf("%01000d", i)), Value: []byte("{}")})
	}
	produceRecords(t, s, "in", 0, recs)
	p := waitIn(t, s, m, "c", 6000)
	if p.Stats.RecordsOut != 6000 || p.Stats.Steps < 2 {
		t.Fatalf("stats %+v", p.Stats)
	}
}

// TestOversizeWhileOtherPartitionBusy: a record too large for any step
// reaches the dead-letter topic even while another partition always has
// input (the retry reads the same partition first).
func TestOversizeWhileOtherPartitionBusy(t *testing.T) {
	s := openStore(t)
	m := runManager(t, s)
	createTopic(t, s, "in", 2, map[string]string{"max.message.bytes": "20000000"})
	deploy(t, s, `{"name":"big","inputs":["in"],"output":"out","step":{"max_records":2},"stages":[{"map":{"value":"value + value"}}]}`)
	produceRecords(t, s, "in", 0, []log.Record{{Key: []byte("h"), Value: bytes.Repeat([]byte("x"), 5<<20)}, {Value: []byte("b")}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = s.Produce(ctx, time.Now().UnixMilli(), []raftstore.ProduceBatch{{Topic: "in", Partition: 1, Data: log.EncodeBatch([]log.Record{{Value: []byte("s")}})}})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, _ := s.Processor("big")
		if p.Offsets["in/0"] == 2 && p.Stats.DLQ == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 0 stuck behind its oversize record: offsets %v, stats %+v, status %+v", p.Offsets, p.Stats, m.Status("big"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
