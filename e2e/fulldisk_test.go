package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/internal/node"
)

// TestFullDisk: when the data directory's filesystem fills, produce is
// refused at once with KAFKA_STORAGE_ERROR, /readyz says why, and a metric
// counts the refusals; once space is freed the node serves again by
// itself, with every acknowledged record intact.
func TestFullDisk(t *testing.T) {
	dir := tmpfsDir(t, "128m")
	n := startNode(t, func(c *node.Config) { c.DataDir = dir })
	const topic = "full-disk"
	createTopic(t, newAdmin(t, n.KafkaAddr()), topic, 1, nil)
	cl := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic))

	var acked [][]byte
	produce := func(i int) error {
		v := fmt.Appendf(bytes.Repeat([]byte{'x'}, 1000), "%06d", i)
		err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: v}).FirstErr()
		if err == nil {
			acked = append(acked, v)
		}
		return err
	}
	for i := range 100 {
		if err := produce(i); err != nil {
			t.Fatalf("produce %d before the disk is full: %v", i, err)
		}
	}

	filler := fillDisk(t, dir)

	// Free space is sampled twice a second.
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		code, body := getReadyz(t, n.AdminAddr())
		if code == http.StatusServiceUnavailable && strings.Contains(body, "disk") {
			t.Logf("/readyz on a full disk: %s", body)
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("/readyz on a full disk: %d %q, want 503 naming the disk", code, body)
		}
	}
	// A raw produce sees the error code itself: franz-go would retry a
	// retriable error until its own timeout.
	start := time.Now()
	code := rawProduce(t, cl, topic, bytes.Repeat([]byte{'y'}, 256<<10))
	if took := time.Since(start); code != kerr.KafkaStorageError.Code || took > time.Second {
		t.Fatalf("produce on a full disk: %v after %v, want KAFKA_STORAGE_ERROR at once", kerr.ErrorForCode(code), took)
	}
	if v := metricValue(t, n.AdminAddr(), "brokerd_storage_refused_total"); v < 1 {
		t.Fatalf("brokerd_storage_refused_total = %v, want >= 1", v)
	}
	if v := metricValue(t, n.AdminAddr(), "brokerd_storage_refusing"); v != 1 {
		t.Fatalf("brokerd_storage_refusing = %v, want 1", v)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 100; ; i++ {
		err := produce(i)
		if err == nil {
			t.Logf("serving again %v after space was freed", 15*time.Second-time.Until(deadline))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing 15 s after space was freed: %v\nlogs:\n%s", err, n.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body := getReadyz(t, n.AdminAddr()); code != http.StatusOK {
		t.Fatalf("/readyz after space was freed: %d %q", code, body)
	}
	got := consumeUntil(t, n.KafkaAddr(), topic, atStart(1), len(acked), 30*time.Second)[0]
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for _, v := range acked {
		if !seen[string(v)] {
			t.Fatalf("acknowledged record %q lost", v[len(v)-6:])
		}
	}
}

// tmpfsDir mounts a tmpfs of size (mount's syntax: "64m") on a temporary
// directory. It needs root, so the test is skipped without it.
func tmpfsDir(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	mountTmpfs(t, dir, size)
	return dir
}

// mountTmpfs mounts a tmpfs of size on dir, creating it, until the test
// ends (a lazy unmount: processes the test started may still hold files
// there). Without root the test is skipped.
func mountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s tmpfs (needs root): %v: %s", size, err, out)
	}
	// A test binary killed before this runs leaves the mount behind.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillDisk writes a file in dir until its filesystem is full and returns
// its path.
func fillDisk(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatalf("fill disk: %v", err)
		}
	}
}

// rawProduce sends one acks=all Produce of value to partition 0 of topic
// and returns the partition's error code.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, value []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchtest.New(batchtest.NoProducer, value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 30*time.Second), cl)
	if err != nil {
		t.Fatalf("produce request: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// getReadyz returns /readyz's status code and body.
func getReadyz(t *testing.T, admin string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFaultFullDisk: on a three-node cluster of brokerd processes, each
// with its data on a small filesystem of its own, a follower's disk fills,
// then the leader's. An idempotent acks=all producer runs throughout and
// none of its records may fail: the follower with a full disk says so on
// /readyz while the other two go on; the leader with a full disk refuses
// writes and hands leadership to a node with room. Once space is freed
// each node catches up by itself, and every replica ends with the same
// segment bytes and every acknowledged record.
func TestFaultFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	c := newProcClusterEach(t, 3, func(c *procCluster, i int) []string {
		mountTmpfs(t, c.nodes[i].dataDir, "256m")
		return nil
	})
	const topic = "full-disk"
	createClusterTopic(t, c, topic, 2)
	lp := startLoad(t, c, topic, 2000)
	ackedAtLeast := func(n int, within time.Duration, what string) {
		t.Helper()
		waitFor(t, within, what, func() (bool, string) {
			a, _ := lp.ledger.counts()
			return a >= n, fmt.Sprint(a)
		})
	}
	acked := func() int { a, _ := lp.ledger.counts(); return a }
	readyz := func(bp *brokerProc, want int, substr string, within time.Duration, what string) {
		t.Helper()
		waitFor(t, within, what, func() (bool, string) {
			code, body := getReadyz(t, bp.adminAddr())
			return code == want && strings.Contains(body, substr), fmt.Sprintf("%d %s", code, body)
		})
	}
	ackedAtLeast(2000, 30*time.Second, "records acknowledged before any disk fills")

	f := (c.waitLeader(30*time.Second) + 1) % 3
	filler := fillDisk(t, c.nodes[f].dataDir)
	readyz(c.nodes[f], http.StatusServiceUnavailable, "disk", 5*time.Second, "the full follower's /readyz to say why")
	ackedAtLeast(acked()+4000, 30*time.Second, "the other two nodes to go on acknowledging")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	readyz(c.nodes[f], http.StatusOK, "ready", 20*time.Second, "the follower to be ready again once space is freed")

	l := c.waitLeader(30 * time.Second)
	filler = fillDisk(t, c.nodes[l].dataDir)
	waitFor(t, 30*time.Second, "the full leader to hand leadership off", func() (bool, string) {
		n := c.leader()
		return n >= 0 && n != l, fmt.Sprint(n)
	})
	ackedAtLeast(acked()+4000, 60*time.Second, "the new leader to go on acknowledging")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	readyz(c.nodes[l], http.StatusOK, "ready", 20*time.Second, "the old leader to be ready again once space is freed")
	ackedAtLeast(acked()+2000, 30*time.Second, "more records after both disks were freed")
	if !strings.Contains(c.nodes[l].logTail(1<<22), "handing raft leadership to another node") {
		t.Fatal("leadership moved, but not by the full leader's hand-off")
	}
	for i, bp := range c.nodes {
		if !bp.running() {
			t.Fatalf("node %d exited", i+1)
		}
		logs := bp.logTail(1 << 22)
		t.Logf("node %d: %d appends waited for space, raft-wal reopened %d times, %d elections", i+1,
			strings.Count(logs, "waits for disk space"), strings.Count(logs, "raft-wal reopened"), strings.Count(logs, "entering candidate state"))
	}
	lp.stop(t)
	checkHealed(t, c, lp, topic, true)
	faultConverge(t, c, 60*time.Second)
}
