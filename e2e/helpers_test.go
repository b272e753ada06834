package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
)

// longTests reports whether BROKERD_LONG_TESTS asks for the longer fault
// variants.
func longTests() bool { return os.Getenv("BROKERD_LONG_TESTS") == "1" }

// logLevel is the in-process broker's log level: info, or debug with
// BROKERD_E2E_VERBOSE=1.
func logLevel() slog.Level {
	if verbose() {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// verbose reports whether broker logs stream to stderr as they are written.
func verbose() bool { return os.Getenv("BROKERD_E2E_VERBOSE") == "1" }

// logBuffer collects a node's logs; they are printed only if the test fails,
// so a passing run stays quiet and a failing one shows what the broker said.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if verbose() {
		os.Stderr.Write(p)
	}
	// Keep the last few MiB only.
	if b.buf.Len() > 8<<20 {
		rest := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-4<<20:]...)
		b.buf.Reset()
		b.buf.WriteString("... (earlier logs dropped)\n")
		b.buf.Write(rest)
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dumpOnFailure prints the tail of logs at test cleanup if the test failed,
// and with BROKERD_E2E_LOGDIR=dir writes all it kept to a file there.
func dumpOnFailure(t testing.TB, what string, logs func() string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		s := logs()
		if dir := os.Getenv("BROKERD_E2E_LOGDIR"); dir != "" {
			name := strings.NewReplacer("/", "_", " ", "_", "(", "", ")", "").Replace(t.Name() + "-" + what)
			path := filepath.Join(dir, name+".log")
			if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
				t.Logf("BROKERD_E2E_LOGDIR: %v", err)
			} else {
				t.Logf("the whole of %s: %s", what, path)
			}
		}
		const max = 16 << 10
		if len(s) > max {
			s = "...\n" + s[len(s)-max:]
		}
		t.Logf("---- %s (tail) ----\n%s\n---- end of %s ----", what, s, what)
	})
}

// testNode is an in-process brokerd.
type testNode struct {
	*node.Node
	cfg  node.Config
	logs *logBuffer
}

// startNode starts a single in-process node on loopback :0 ports with its
// data in a temporary directory, and closes it when the test ends.
func startNode(t testing.TB, tweak ...func(*node.Config)) *testNode {
	t.Helper()
	logs := &logBuffer{}
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
	for _, f := range tweak {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v\nlogs:\n%s", err, logs.String())
	}
	dumpOnFailure(t, "broker logs", logs.String)
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return &testNode{Node: n, cfg: cfg, logs: logs}
}

// TestStartFreshDataDir starts a node with the default raft log store on an
// empty data directory, without any help.
func TestStartFreshDataDir(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "fresh")
	cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("node.Start with DefaultConfig (raft log store %q) on a fresh data dir: %v", cfg.LogStore, err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// And again on the same directory.
	n, err = node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("node.Start again on the same data dir: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// testCtx is a context bounded by d that is canceled when the test ends.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// kgoLogger routes franz-go's warnings and errors into the test log buffer.
type kgoLogger struct{ logs *logBuffer }

func (l kgoLogger) Level() kgo.LogLevel {
	if verbose() {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelInfo
}
func (l kgoLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	if l.logs == nil {
		return
	}
	fmt.Fprintf(l.logs, "franz-go %s: %s %v\n", level, msg, kv)
}

// newKgo returns a franz-go client for addr, closed when the test ends.
func newKgo(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID("brokerd-e2e"),
		kgo.RetryTimeout(20 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("new franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client over a fresh franz-go client.
func newAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, addr))
}

// createTopic creates a topic with kadm and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil {
		t.Fatalf("CreateTopics %q (%d partitions, configs %v): %v (%s)", name, partitions, fmtConfigs(configs), err, resp.ErrMessage)
	}
	if resp.NumPartitions != partitions {
		t.Fatalf("CreateTopics %q: response says %d partitions, want %d", name, resp.NumPartitions, partitions)
	}
}

func fmtConfigs(c map[string]*string) string {
	var parts []string
	for k, v := range c {
		if v == nil {
			parts = append(parts, k+"=<nil>")
		} else {
			parts = append(parts, k+"="+*v)
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// endOffsets lists the end offset of every partition of topic.
func endOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listOffsets(t, "ListEndOffsets", topic, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, topic)
	})
}

// startOffsets lists the start offset of every partition of topic.
func startOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listOffsets(t, "ListStartOffsets", topic, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListStartOffsets(ctx, topic)
	})
}

func listOffsets(t testing.TB, what, topic string, fn func(context.Context) (kadm.ListedOffsets, error)) map[int32]int64 {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	lo, err := fn(ctx)
	if err != nil {
		t.Fatalf("%s %q: %v", what, topic, err)
	}
	if err := lo.Error(); err != nil {
		t.Fatalf("%s %q: partition error: %v", what, topic, err)
	}
	out := map[int32]int64{}
	for p, o := range lo[topic] {
		out[p] = o.Offset
	}
	if len(out) == 0 {
		t.Fatalf("%s %q: no partitions listed (response %+v)", what, topic, lo)
	}
	return out
}

// consumeUntil reads topic from the given per-partition offsets without a
// group until want records have arrived or the deadline passes, and returns
// what arrived in arrival order per partition. It keeps polling briefly
// after reaching want, to catch duplicates or strays.
func consumeUntil(t testing.TB, addr, topic string, from map[int32]kgo.Offset, want int, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	cl := newKgo(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	got := map[int32][]*kgo.Record{}
	n := 0
	deadline := time.Now().Add(timeout)
	var extraUntil time.Time
	for {
		now := time.Now()
		if !extraUntil.IsZero() && now.After(extraUntil) {
			break
		}
		if now.After(deadline) {
			break
		}
		stop := deadline
		if !extraUntil.IsZero() {
			stop = extraUntil
		}
		ctx, cancel := context.WithDeadline(context.Background(), stop)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if err == context.DeadlineExceeded || err == context.Canceled {
				return
			}
			t.Errorf("fetch %s/%d: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			n++
		})
		if n >= want && extraUntil.IsZero() {
			extraUntil = time.Now().Add(300 * time.Millisecond)
		}
	}
	if n < want {
		t.Errorf("consumed %d records from %q within %s, want %d", n, topic, timeout, want)
	}
	return got
}

// atStart is kgo.NewOffset().AtStart() for partitions 0..n-1.
func atStart(n int32) map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := int32(0); p < n; p++ {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}
