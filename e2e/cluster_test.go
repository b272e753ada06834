package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/raftstore"
)

// startCluster starts size in-process nodes that bootstrap one raft group
// from static peers, each with a Kafka and an admin listener.
func startCluster(t *testing.T, size int, tweak ...func(*node.Config)) []*node.Node {
	t.Helper()
	var peers []raftstore.Peer
	for id := int32(1); id <= int32(size); id++ {
		peers = append(peers, raftstore.Peer{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))})
	}
	nodes := make([]*node.Node, size)
	for i := range nodes {
		logs := &logBuffer{}
		dumpOnFailure(t, fmt.Sprintf("node %d logs", i+1), logs.String)
		cfg := node.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		cfg.DataDir = t.TempDir()
		cfg.KafkaAddr = "127.0.0.1:0"
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.RaftAddr = peers[i].Addr
		cfg.Peers = peers
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
		for _, f := range tweak {
			f(&cfg)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := node.Start(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		nodes[i] = n
		t.Cleanup(func() { n.Close() })
	}
	return nodes
}

func adminCall(t *testing.T, method, addr, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte: // sent as it is (a YAML spec)
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func clusterStatus(t *testing.T, addr string) node.ClusterStatus {
	t.Helper()
	code, body := adminCall(t, http.MethodGet, addr, "/v1/cluster", nil)
	var st node.ClusterStatus
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("GET /v1/cluster on %s: %d %s", addr, code, body)
	}
	return st
}

// TestClusterMembership: three nodes agree on one cluster id and on every
// member's Kafka address (followers register through the leader), Metadata
// lists all three brokers, and leadership transfer, removal and addition
// work through any member's admin API.
func TestClusterMembership(t *testing.T) {
	nodes := startCluster(t, 3)
	follower := func() *node.Node {
		for _, n := range nodes {
			if n != nil && !n.Store().IsLeader() {
				return n
			}
		}
		return nil
	}
	waitFor(t, 20*time.Second, "three registered members", func() (bool, string) {
		st := clusterStatus(t, nodes[2].AdminAddr())
		reg := 0
		for _, m := range st.Members {
			if m.KafkaAddr != "" && m.AdminAddr != "" {
				reg++
			}
		}
		return reg == 3 && st.ClusterID != "" && st.LeaderID > 0, fmt.Sprintf("%+v", st)
	})
	cid := nodes[0].Store().ClusterID()
	for i, n := range nodes {
		cl := newKgo(t, n.KafkaAddr())
		// Each node sees the registrations once it has applied them.
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d's Metadata to list three brokers", i+1), func() (bool, string) {
			req := kmsg.NewPtrMetadataRequest()
			resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
			if err != nil {
				return false, err.Error()
			}
			id := ""
			if resp.ClusterID != nil {
				id = *resp.ClusterID
			}
			return id == cid && len(resp.Brokers) == 3, fmt.Sprintf("cluster id %q (want %s), %d brokers", id, cid, len(resp.Brokers))
		})
	}

	// Transfer leadership through a follower's admin API (forwarded).
	st := clusterStatus(t, nodes[0].AdminAddr())
	target := int32(1)
	if st.LeaderID == 1 {
		target = 2
	}
	code, body := adminCall(t, http.MethodPost, follower().AdminAddr(), "/v1/cluster/leader", map[string]int32{"node_id": target})
	if code != http.StatusOK {
		t.Fatalf("transfer: %d %s", code, body)
	}
	waitFor(t, 10*time.Second, "the new leader", func() (bool, string) {
		return nodes[target-1].Store().IsLeader(), fmt.Sprintf("leader %v", clusterStatus(t, nodes[0].AdminAddr()).LeaderID)
	})

	// Remove a follower, write, and add it back.
	victim := int32(3)
	if target == 3 {
		victim = 1
	}
	code, body = adminCall(t, http.MethodDelete, nodes[target-1].AdminAddr(), fmt.Sprintf("/v1/cluster/members/%d", victim), nil)
	if code != http.StatusOK {
		t.Fatalf("remove: %d %s", code, body)
	}
	if st := clusterStatus(t, nodes[target-1].AdminAddr()); len(st.Members) != 2 {
		t.Fatalf("after removal: %+v", st)
	}
	// The removed node finds out and stops serving, saying why.
	select {
	case err := <-nodes[victim-1].Failed():
		if !strings.Contains(err.Error(), "removed from the cluster") {
			t.Fatalf("removed node stopped with: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the removed node did not notice")
	}
	nodes[victim-1].Close()
	cl := newKgo(t, nodes[target-1].KafkaAddr(), kgo.DefaultProduceTopic("members"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(testCtx(t, 20*time.Second), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce with two members: %v", err)
	}
	raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_ = st
	// A fresh node takes the removed one's place, added through the API.
	fresh := startJoiner(t, victim, nodes[target-1].AdminAddr(), raftAddr)
	waitFor(t, 20*time.Second, "the added member to catch up", func() (bool, string) {
		v := fresh.Store()
		_, ok := v.Topic("members")
		return ok, fmt.Sprintf("applied %d", v.AppliedIndex())
	})
}

// TestClusterJoin: a fresh node started with a member's admin address and
// no peers joins a running cluster whose raft log was already trimmed, and
// catches up by snapshot install; restarting it with the same settings
// rejoins.
func TestClusterJoin(t *testing.T) {
	nodes := startCluster(t, 3)
	cl := newKgo(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic("joined"), kgo.AllowAutoTopicCreation())
	ctx := testCtx(t, 60*time.Second)
	for i := 0; i < 200; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// Let the members take a snapshot that trims their raft log.
	for _, n := range nodes {
		if err := n.Store().SnapshotNow(); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	logs := &logBuffer{}
	dumpOnFailure(t, "joining node logs", logs.String)
	cfg := node.DefaultConfig()
	cfg.NodeID = 4
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg.Join = nodes[1].AdminAddr()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
	start := func() *node.Node {
		sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		n, err := node.Start(sctx, cfg)
		if err != nil {
			t.Fatalf("start joining node: %v", err)
		}
		return n
	}
	n4 := start()
	waitFor(t, 30*time.Second, "the joined node to catch up", func() (bool, string) {
		l, ok := n4.Store().Log("joined", 0)
		if !ok {
			return false, "no topic yet"
		}
		return l.EndOffset() == 200, fmt.Sprintf("end offset %d", l.EndOffset())
	})
	if st := clusterStatus(t, nodes[0].AdminAddr()); len(st.Members) != 4 {
		t.Fatalf("members after join: %+v", st)
	}
	if err := n4.Close(); err != nil {
		t.Fatal(err)
	}
	n4 = start()
	defer n4.Close()
	if got := n4.Store().ClusterID(); got != nodes[0].Store().ClusterID() {
		t.Fatalf("joined node's cluster id %q, want %q", got, nodes[0].Store().ClusterID())
	}
}

// startJoiner starts a fresh node id that joins through admin.
func startJoiner(t *testing.T, id int32, admin, raftAddr string) *node.Node {
	t.Helper()
	logs := &logBuffer{}
	dumpOnFailure(t, fmt.Sprintf("joining node %d logs", id), logs.String)
	cfg := node.DefaultConfig()
	cfg.NodeID = id
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", raftAddr
	cfg.Join = admin
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start joining node %d: %v", id, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestClusterISR: every partition's replicas are the three members; a
// member the leader stops hearing from leaves the ISR after
// replica.lag.time.max.ms, and Metadata still names the leader.
func TestClusterISR(t *testing.T) {
	nodes := startCluster(t, 3, func(c *node.Config) { c.ReplicaLag = time.Second })
	var leader *node.Node
	waitFor(t, 10*time.Second, "a leader", func() (bool, string) {
		for _, n := range nodes {
			if n.Store().IsLeader() {
				leader = n
				return true, ""
			}
		}
		return false, "none"
	})
	cl := newKgo(t, leader.KafkaAddr(), kgo.DefaultProduceTopic("isr"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(testCtx(t, 20*time.Second), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	isrOf := func() (replicas, isr []int32) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("isr")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), newKgo(t, leader.KafkaAddr()))
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("metadata: %v %+v", err, resp)
		}
		p := resp.Topics[0].Partitions[0]
		return p.Replicas, p.ISR
	}
	waitFor(t, 10*time.Second, "three replicas in sync", func() (bool, string) {
		r, i := isrOf()
		return len(r) == 3 && len(i) == 3, fmt.Sprintf("replicas %v isr %v", r, i)
	})
	var gone *node.Node
	for _, n := range nodes {
		if n != leader {
			gone = n
			break
		}
	}
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the stopped member to leave the ISR", func() (bool, string) {
		r, i := isrOf()
		return len(r) == 3 && len(i) == 2, fmt.Sprintf("replicas %v isr %v", r, i)
	})
}

// TestFollowerFetch: a consumer with client.rack set reads from the member
// in its rack (KIP-392): the leader names it as the preferred read replica
// and that member serves every record, up to what it has applied.
func TestFollowerFetch(t *testing.T) {
	racks := map[int32]string{1: "rack-a", 2: "rack-b", 3: "rack-c"}
	nodes := startCluster(t, 3, func(c *node.Config) { c.Rack = racks[c.NodeID] })
	var leader *node.Node
	waitFor(t, 10*time.Second, "a leader with every member registered", func() (bool, string) {
		for _, n := range nodes {
			if n.Store().IsLeader() && len(n.Store().Brokers()) == 3 {
				leader = n
				return true, ""
			}
		}
		return false, "not yet"
	})
	var far *node.Node
	for _, n := range nodes {
		if n != leader {
			far = n
			break
		}
	}
	farRack := racks[far.Store().NodeID()]
	prod := newKgo(t, leader.KafkaAddr(), kgo.DefaultProduceTopic("racked"), kgo.AllowAutoTopicCreation())
	ctx := testCtx(t, 60*time.Second)
	for i := range 100 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Count the fetches each node answers.
	before := map[int32]float64{}
	for _, n := range nodes {
		before[n.Store().NodeID()] = fetchCount(t, n.AdminAddr())
	}
	cons := newKgo(t, leader.KafkaAddr(), kgo.ConsumeTopics("racked"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack(farRack), kgo.FetchMaxWait(100*time.Millisecond))
	got := 0
	for got < 100 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 100", got)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		got += len(fs.Records())
	}
	if got != 100 {
		t.Fatalf("consumed %d records, want 100", got)
	}
	if served := fetchCount(t, far.AdminAddr()) - before[far.Store().NodeID()]; served < 1 {
		t.Fatalf("the member in the consumer's rack answered %v fetches", served)
	}
}

// fetchCount reads brokerd_requests_total{api="Fetch"} from /metrics.
func fetchCount(t *testing.T, admin string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, `brokerd_requests_total{api="Fetch"} `); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
