package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/raftstore"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startNode(t *testing.T, tweak func(*node.Config)) (*node.Node, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Version = "test"
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close node: %v", err)
		}
		if t.Failed() {
			t.Logf("node logs:\n%s", logs.String())
		}
	})
	return n, logs
}

// scrape fetches /metrics and parses it with Prometheus' text parser.
func scrape(t *testing.T, n *node.Node) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + n.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %s\n%s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels
// include want, and whether it exists. Histograms give their count.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func must(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := value(fams, name, labels)
	if !ok {
		t.Fatalf("no series %s%v on /metrics", name, labels)
	}
	return v
}

func produce(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("record-%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func consumeAll(t *testing.T, addr, topic string, want int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got += fs.NumRecords()
	}
}

func TestMetrics(t *testing.T) {
	n, logs := startNode(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("metrics-test"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, "m", 0, 10)
	consumeAll(t, n.KafkaAddr(), "m", 10)
	// An error: offsets of a topic that does not exist, asked by a client
	// that does not auto-create topics.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	probe, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("metrics-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	_, _ = kadm.NewClient(probe).ListEndOffsets(ctx, "no-such-topic")
	// A committed group offset, written straight to the store.
	if _, err := n.Store().CommitOffsets(ctx, time.Now().UnixMilli(), "g1", []raftstore.OffsetCommit{{Topic: "m", Partition: 0, Offset: 4}}); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, n)
	if v := must(t, fams, "brokerd_requests_total", map[string]string{"api": "Produce"}); v < 1 {
		t.Errorf("Produce requests %v", v)
	}
	if v := must(t, fams, "brokerd_request_duration_seconds", map[string]string{"api": "Fetch"}); v < 1 {
		t.Errorf("Fetch latency samples %v", v)
	}
	if v := must(t, fams, "brokerd_produce_records_total", nil); v != 10 {
		t.Errorf("records in %v, want 10", v)
	}
	if v := must(t, fams, "brokerd_fetch_records_total", nil); v < 10 {
		t.Errorf("records out %v, want at least 10", v)
	}
	bytesIn := must(t, fams, "brokerd_produce_bytes_total", nil)
	if bytesIn <= 0 || must(t, fams, "brokerd_fetch_bytes_total", nil) <= 0 {
		t.Errorf("bytes in %v, bytes out %v", bytesIn, must(t, fams, "brokerd_fetch_bytes_total", nil))
	}
	part := map[string]string{"topic": "m", "partition": "0"}
	if v := must(t, fams, "brokerd_partition_end_offset", part); v != 10 {
		t.Errorf("end offset %v, want 10", v)
	}
	if v := must(t, fams, "brokerd_partition_log_size_bytes", part); v <= 0 {
		t.Errorf("log size %v", v)
	}
	if v := must(t, fams, "brokerd_raft_state", map[string]string{"state": "Leader"}); v != 1 {
		t.Errorf("raft state Leader = %v, want 1", v)
	}
	commit := must(t, fams, "brokerd_raft_commit_index", nil)
	if commit < 1 || must(t, fams, "brokerd_raft_term", nil) < 1 || must(t, fams, "brokerd_raft_fsm_applied_index", nil) < 1 {
		t.Errorf("raft indexes: commit %v", commit)
	}
	must(t, fams, "brokerd_raft_apply_lag", nil)
	if f := fams["brokerd_fsm_checkpoint_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 ||
		len(f.GetMetric()[0].GetHistogram().GetBucket()) < len(raftstore.CheckpointBuckets) {
		t.Errorf("checkpoint histogram: %v", f)
	}
	if f := fams["brokerd_fsm_checkpoint_stall_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("checkpoint stall histogram: %v", f)
	}
	// 10 small records are read into memory, not sent from a file.
	if v := must(t, fams, "brokerd_fetch_sendfile_bytes_total", nil); v < 0 {
		t.Errorf("sendfile bytes %v", v)
	}
	if v := must(t, fams, "brokerd_raft_leader_id", nil); v != 1 {
		t.Errorf("leader id %v", v)
	}
	if v := must(t, fams, "brokerd_connections", nil); v < 1 {
		t.Errorf("connections %v", v)
	}
	if v := must(t, fams, "brokerd_group_lag", map[string]string{"group": "g1"}); v != 6 {
		t.Errorf("group lag %v, want 6", v)
	}
	if v := must(t, fams, "brokerd_group_partition_lag", map[string]string{"group": "g1", "topic": "m", "partition": "0"}); v != 6 {
		t.Errorf("partition lag %v, want 6", v)
	}
	must(t, fams, "brokerd_build_info", map[string]string{"version": "test"})
	must(t, fams, "go_goroutines", nil)
	if _, ok := value(fams, "brokerd_request_errors_total", map[string]string{"error": "UNKNOWN_TOPIC_OR_PARTITION"}); !ok {
		t.Errorf("no UNKNOWN_TOPIC_OR_PARTITION in brokerd_request_errors_total")
	}
	if !strings.Contains(logs.String(), "request failed") || !strings.Contains(logs.String(), "client_id=metrics-test") {
		t.Errorf("no request error logged with its client id")
	}

	// The series move.
	produce(t, cl, "m", 10, 15)
	fams = scrape(t, n)
	if v := must(t, fams, "brokerd_produce_records_total", nil); v != 15 {
		t.Errorf("records in after more: %v, want 15", v)
	}
	if v := must(t, fams, "brokerd_produce_bytes_total", nil); v <= bytesIn {
		t.Errorf("bytes in did not grow: %v", v)
	}
	if v := must(t, fams, "brokerd_partition_end_offset", part); v != 15 {
		t.Errorf("end offset %v, want 15", v)
	}
	if v := must(t, fams, "brokerd_raft_commit_index", nil); v <= commit {
		t.Errorf("commit index did not move: %v", v)
	}
	if v := must(t, fams, "brokerd_group_lag", map[string]string{"group": "g1"}); v != 11 {
		t.Errorf("group lag %v, want 11", v)
	}
}

func TestMetricsWithoutPartitionSeries(t *testing.T) {
	n, _ := startNode(t, func(c *node.Config) { c.NoPartitionMetrics = true })
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, "p", 0, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Store().CommitOffsets(ctx, time.Now().UnixMilli(), "g", []raftstore.OffsetCommit{{Topic: "p", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, n)
	for name := range fams {
		if strings.HasPrefix(name, "brokerd_partition_") || name == "brokerd_group_partition_lag" || name == "brokerd_group_committed_offset" {
			t.Errorf("per-partition series %s exported although switched off", name)
		}
	}
	if v := must(t, fams, "brokerd_group_lag", map[string]string{"group": "g"}); v != 2 {
		t.Errorf("group lag %v, want 2", v)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	n, _ := startNode(t, nil)
	for _, path := range []string{"/healthz", "/readyz", "/debug/pprof/"} {
		resp, err := http.Get("http://" + n.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, resp.Status)
		}
	}
}
