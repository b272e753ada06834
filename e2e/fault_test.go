package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fault tests on a three-node cluster of real brokerd processes on
// 127.0.0.1. Each runs an idempotent acks=all producer through the faults
// and ends with a healed phase that reads everything back: every
// acknowledged record must be there once, at its acknowledged offset.
// `go test` runs short versions; BROKERD_LONG_TESTS=1 (set by .ci/run)
// runs them for longer.

type procCluster struct {
	t     testing.TB
	nodes []*brokerProc
}

func newProcCluster(t testing.TB, size int, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterEach(t, size, nil, extra...)
}

// newProcClusterEach is newProcCluster with arguments of node i's own,
// from each (called once every node has its ports).
func newProcClusterEach(t testing.TB, size int, each func(c *procCluster, i int) []string, extra ...string) *procCluster {
	t.Helper()
	c := &procCluster{t: t}
	var peers []string
	for i := 0; i < size; i++ {
		bp := newBrokerProc(t)
		c.nodes = append(c.nodes, bp)
		peers = append(peers, fmt.Sprintf("%d@127.0.0.1:%d", i+1, bp.raftPort))
	}
	for i, bp := range c.nodes {
		bp.extraArgs = append([]string{"--node-id", strconv.Itoa(i + 1), "--peers", strings.Join(peers, ",")}, extra...)
		if each != nil {
			bp.extraArgs = append(bp.extraArgs, each(c, i)...)
		}
	}
	for _, bp := range c.nodes {
		bp.launch()
	}
	for _, bp := range c.nodes {
		bp.waitReady(60 * time.Second)
	}
	return c
}

func (c *procCluster) seeds() []string {
	var out []string
	for _, bp := range c.nodes {
		out = append(out, bp.kafkaAddr())
	}
	return out
}

// leader asks the running members which node leads; -1 if none knows.
func (c *procCluster) leader() int {
	hc := &http.Client{Timeout: time.Second}
	for _, bp := range c.nodes {
		if !bp.running() {
			continue
		}
		resp, err := hc.Get("http://" + bp.adminAddr() + "/v1/cluster")
		if err != nil {
			continue
		}
		var st struct {
			LeaderID int32 `json:"leader_id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err == nil && st.LeaderID > 0 && c.nodes[st.LeaderID-1].running() {
			return int(st.LeaderID - 1)
		}
	}
	return -1
}

func (c *procCluster) waitLeader(limit time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if l := c.leader(); l >= 0 {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %s", limit)
	return -1
}

// loadProducer produces numbered records through faults until stopped.
type loadProducer struct {
	ledger   *ackLedger
	stopping atomic.Bool
	wg       sync.WaitGroup
	cl       *kgo.Client
	produced atomic.Int64
}

func startLoad(t *testing.T, c *procCluster, topic string, rate float64) *loadProducer {
	t.Helper()
	logs := &logBuffer{}
	dumpOnFailure(t, "producer (franz-go) log", logs.String)
	lp := &loadProducer{ledger: newAckLedger()}
	lp.cl = newKgo(t, c.seeds()[0],
		kgo.SeedBrokers(c.seeds()...),
		kgo.WithLogger(kgoLogger{logs}),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(2000),
		kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.RetryTimeout(2*time.Minute),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	)
	lp.wg.Add(1)
	go func() {
		defer lp.wg.Done()
		began := time.Now()
		for n := 0; !lp.stopping.Load(); n++ {
			if n%20 == 0 {
				if ahead := time.Duration(float64(n)/rate*float64(time.Second)) - time.Since(began); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			v := fmt.Sprintf("v-%09d", n)
			lp.cl.Produce(context.Background(), &kgo.Record{Key: []byte(v[len(v)-2:]), Value: []byte(v)}, lp.ledger.promise)
			lp.produced.Add(1)
		}
	}()
	return lp
}

// stop ends the load and waits for every record in flight to be acked or
// to fail.
func (lp *loadProducer) stop(t *testing.T) {
	t.Helper()
	lp.stopping.Store(true)
	lp.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := lp.cl.Flush(ctx); err != nil {
		t.Fatalf("flush the producer: %v", err)
	}
}

// checkHealed reads the topic back from every node in turn and checks the
// ledger against each.
func checkHealed(t *testing.T, c *procCluster, lp *loadProducer, topic string, strict bool) {
	t.Helper()
	acked, failed := lp.ledger.counts()
	t.Logf("%d produced, %d acknowledged, %d failed", lp.produced.Load(), acked, failed)
	if acked == 0 {
		t.Fatal("nothing was acknowledged")
	}
	if strict && failed > 0 {
		t.Fatalf("%d produces failed; first: %v", failed, lp.ledger.firstErrors(5))
	}
	where, _ := readEverything(t, c.nodes[c.waitLeader(30*time.Second)].kafkaAddr(), topic)
	verifyLedger(t, lp.ledger, where, "after healing")
}

func createClusterTopic(t *testing.T, c *procCluster, name string, partitions int32) {
	t.Helper()
	cl := newKgo(t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...))
	createTopic(t, kadm.NewClient(cl), name, partitions, nil)
}

// TestFaultKillLeader: SIGKILL the leader every few seconds and restart it
// two seconds later. Nothing acknowledged may be lost, duplicated or moved.
func TestFaultKillLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	dur, every := 15*time.Second, 5*time.Second
	if longTests() {
		dur = 60 * time.Second
	}
	c := newProcCluster(t, 3)
	createClusterTopic(t, c, "kill-leader", 3)
	lp := startLoad(t, c, "kill-leader", 2000)
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		time.Sleep(every - 2*time.Second)
		l := c.waitLeader(30 * time.Second)
		killed := time.Now()
		c.nodes[l].kill()
		time.Sleep(2 * time.Second)
		c.nodes[l].launch()
		nl := c.waitLeader(30 * time.Second)
		t.Logf("killed leader %d; node %d leads %s later", l+1, nl+1, time.Since(killed).Round(time.Millisecond))
	}
	for _, bp := range c.nodes {
		bp.waitReady(60 * time.Second)
	}
	lp.stop(t)
	checkHealed(t, c, lp, "kill-leader", false)
}

// TestFaultKillAll: SIGKILL all three at once under load and restart them:
// every acknowledged record is there.
func TestFaultKillAll(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	c := newProcCluster(t, 3)
	createClusterTopic(t, c, "kill-all", 3)
	lp := startLoad(t, c, "kill-all", 3000)
	time.Sleep(3 * time.Second)
	for _, bp := range c.nodes {
		bp.kill()
	}
	for _, bp := range c.nodes {
		bp.launch()
	}
	for _, bp := range c.nodes {
		bp.waitReady(60 * time.Second)
	}
	time.Sleep(time.Second)
	lp.stop(t)
	checkHealed(t, c, lp, "kill-all", false)
}

// TestFaultRollingRestart: SIGTERM and restart each node in turn under
// load. SIGTERM hands leadership over first, so no produce may fail.
func TestFaultRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	c := newProcCluster(t, 3)
	createClusterTopic(t, c, "rolling", 3)
	lp := startLoad(t, c, "rolling", 2000)
	for _, bp := range c.nodes {
		time.Sleep(1500 * time.Millisecond)
		if code := bp.term(45 * time.Second); code != 0 {
			t.Fatalf("brokerd exited %d after SIGTERM:\n%s", code, bp.logTail(3000))
		}
		bp.start()
	}
	time.Sleep(time.Second)
	lp.stop(t)
	checkHealed(t, c, lp, "rolling", true)
}

// signal sends sig to the running process.
func (b *brokerProc) signal(sig syscall.Signal) {
	b.t.Helper()
	fmt.Fprintf(b.logFile, "\n===== e2e: %v at %s =====\n", sig, time.Now().Format(time.RFC3339Nano))
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("signal %v: %v", sig, err)
	}
}

// TestFaultPauseLeader: SIGSTOP the leader for a few seconds, then let it
// go on. The others elect a new leader; the old one, resumed, must not
// acknowledge anything that is then lost.
func TestFaultPauseLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	rounds := 2
	if longTests() {
		rounds = 6
	}
	c := newProcCluster(t, 3)
	createClusterTopic(t, c, "pause", 3)
	lp := startLoad(t, c, "pause", 2000)
	for i := 0; i < rounds; i++ {
		time.Sleep(2 * time.Second)
		l := c.waitLeader(30 * time.Second)
		c.nodes[l].signal(syscall.SIGSTOP)
		time.Sleep(time.Duration(3+i%4) * time.Second)
		c.nodes[l].signal(syscall.SIGCONT)
	}
	time.Sleep(2 * time.Second)
	lp.stop(t)
	checkHealed(t, c, lp, "pause", false)
}

// segmentSums maps "<partition dir>/<file>" to a checksum of each non-empty
// segment file in a data directory.
func segmentSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	// Partition directories only: not pins, holds or staging (".*").
	matches, _ := filepath.Glob(filepath.Join(dir, "[^.]*", "*.log"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			continue
		}
		rel, _ := filepath.Rel(dir, m)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))[:16]
	}
	return out
}

// reusedRE finds the leader's count of segment files an install did not
// send because the follower held them.
var reusedRE = regexp.MustCompile(`sending a snapshot.* reused=(\d+)`)

// TestFaultFollowerCatchUp: stop a follower, write enough that the others
// trim their raft log past it, restart it: it catches up by a snapshot
// install, its segments end byte-identical to the leader's, and after a
// leadership transfer to it every acknowledged record is read from it.
// Then wipe another follower's data directory: it is rebuilt from the
// others.
func TestFaultFollowerCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	// raft-boltdb trims at once (raft-wal keeps its open 64 MiB segment).
	c := newProcCluster(t, 3, "--raft-log-store", "boltdb", "--override", "log.segment.bytes=65536",
		"--override", "brokerd.raft.snapshot.bytes=65536", "--override", "brokerd.raft.trailing.logs=16")
	createClusterTopic(t, c, "catch-up", 2)
	l := c.waitLeader(30 * time.Second)
	f := (l + 1) % 3
	// The follower holds some sealed segments when it stops: the install
	// must not send those again.
	lp := startLoad(t, c, "catch-up", 5000)
	waitFor(t, 30*time.Second, "records acknowledged before the follower stops", func() (bool, string) {
		n, _ := lp.ledger.counts()
		return n >= 15000, fmt.Sprint(n)
	})
	if code := c.nodes[f].term(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM exit %d", code)
	}
	time.Sleep(6 * time.Second)
	lp.stop(t)
	c.nodes[f].start()
	// Compare once the follower has everything.
	leaderDir := c.nodes[c.waitLeader(30*time.Second)].dataDir
	waitFor(t, 60*time.Second, "the follower's segments to match the leader's", func() (bool, string) {
		a, b := segmentSums(t, leaderDir), segmentSums(t, c.nodes[f].dataDir)
		return len(a) > 0 && fmt.Sprint(a) == fmt.Sprint(b), fmt.Sprintf("leader %d files, follower %d", len(a), len(b))
	})
	// The segments are in place just before the install logs its end.
	waitFor(t, 10*time.Second, "the follower to log a snapshot install (or it caught up from the raft log, and the test did not test it)", func() (bool, string) {
		return strings.Contains(c.nodes[f].logTail(1<<20), "installed a snapshot from the leader"), ""
	})
	var reused []string
	for _, bp := range c.nodes {
		for _, m := range reusedRE.FindAllStringSubmatch(bp.logTail(1<<20), -1) {
			reused = append(reused, m[1])
		}
	}
	if !slices.ContainsFunc(reused, func(n string) bool { return n != "0" }) {
		t.Fatalf("the install sent every segment file again, though the follower held some (files reused per install: %v)", reused)
	}
	t.Logf("segment files reused per install: %v", reused)
	// Lead from the caught-up follower and read everything from it.
	code, body := adminCall(t, http.MethodPost, c.nodes[f].adminAddr(), "/v1/cluster/leader", map[string]int{"node_id": f + 1})
	if code != http.StatusOK {
		t.Fatalf("transfer leadership: %d %s", code, body)
	}
	waitFor(t, 20*time.Second, "the follower to lead", func() (bool, string) { return c.leader() == f, fmt.Sprint(c.leader()) })
	where, _ := readEverything(t, c.nodes[f].kafkaAddr(), "catch-up")
	verifyLedger(t, lp.ledger, where, "read from the caught-up follower")

	// Wipe another follower's data directory and restart it.
	w := (f + 1) % 3
	if w == c.leader() {
		w = (w + 1) % 3
	}
	if code := c.nodes[w].term(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM exit %d", code)
	}
	if err := os.RemoveAll(c.nodes[w].dataDir); err != nil {
		t.Fatal(err)
	}
	c.nodes[w].start()
	waitFor(t, 60*time.Second, "the wiped follower to be rebuilt", func() (bool, string) {
		a, b := segmentSums(t, c.nodes[c.leader()].dataDir), segmentSums(t, c.nodes[w].dataDir)
		return len(a) > 0 && fmt.Sprint(a) == fmt.Sprint(b), fmt.Sprintf("leader %d files, rebuilt %d", len(a), len(b))
	})
	waitFor(t, 10*time.Second, "the wiped follower to log a snapshot install (not a rebuild from the raft log)", func() (bool, string) {
		return strings.Contains(c.nodes[w].logTail(1<<20), "installed a snapshot from the leader"), ""
	})
}

// BenchmarkFailover measures, on a three-node cluster of brokerd
// processes, the time from SIGKILL of the leader to the first produce
// acknowledged (acks=all) by the new leader, once per iteration; the old
// leader is restarted between iterations. Report: median and max.
//
//	go test -run '^$' -bench BenchmarkFailover -benchtime 10x ./e2e/
func BenchmarkFailover(b *testing.B) {
	c := newProcCluster(b, 3)
	cl := newKgo(b, c.seeds()[0], kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("failover-bench"),
		kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.RecordDeliveryTimeout(time.Minute),
		kgo.MetadataMinAge(100*time.Millisecond))
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := c.waitLeader(30 * time.Second)
		start := time.Now()
		c.nodes[l].kill()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		c.nodes[l].start()
		time.Sleep(time.Second)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
}
