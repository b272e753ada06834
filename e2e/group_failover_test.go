package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/raftstore"
)

// TestGroupCoordinatorFailover runs a group consumer against a three-node
// cluster, stops the raft leader (which coordinates every group), and
// checks that the consumer finds the new leader's coordinator, which took
// the group over from its replicated membership record (the member carries
// on without rejoining), keeps its committed offsets (they are replicated through raft) and
// consumes what is produced after the failover.
func TestGroupCoordinatorFailover(t *testing.T) {
	t.Parallel()
	const size = 3
	var peers []raftstore.Peer
	for id := int32(1); id <= size; id++ {
		peers = append(peers, raftstore.Peer{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))})
	}
	nodes := make([]*node.Node, size)
	var seeds []string
	for i := range nodes {
		logs := &logBuffer{}
		dumpOnFailure(t, fmt.Sprintf("node %d logs", i+1), logs.String)
		cfg := node.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		cfg.DataDir = t.TempDir()
		cfg.KafkaAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cfg.AdminAddr = ""
		cfg.RaftAddr = peers[i].Addr
		cfg.Peers = peers
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
		fastGroups(&cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := node.Start(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		nodes[i] = n
		seeds = append(seeds, cfg.KafkaAddr)
	}
	closed := make([]bool, size)
	t.Cleanup(func() {
		for i, n := range nodes {
			if !closed[i] {
				n.Close()
			}
		}
	})
	leaderIdx := func() int {
		for i, n := range nodes {
			if !closed[i] && n.Store().IsLeader() {
				return i
			}
		}
		return -1
	}
	waitFor(t, 20*time.Second, "a raft leader", func() (bool, string) { return leaderIdx() >= 0, "none yet" })

	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30 * time.Second)}
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	createTopic(t, adm, "failover", 3, nil)
	produce := func(tag string, n int) {
		prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("failover"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var recs []*kgo.Record
		for p := int32(0); p < 3; p++ {
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", tag, p, i))})
			}
		}
		if err := prod.ProduceSync(testCtx(t, 60*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tag, err)
		}
	}
	produce("before", 20)

	cl, err := kgo.NewClient(append(opts,
		kgo.ConsumerGroup("failover-g"),
		kgo.ConsumeTopics("failover"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// Long enough for the member to find the new coordinator under load:
		// the group is taken over, and the member must still be in it.
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	consume := func(want int, what string) {
		deadline := time.Now().Add(60 * time.Second)
		for len(seen) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d records", what, len(seen), want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cl.PollFetches(ctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			if len(fs.Records()) > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Logf("%s: commit: %v (retried with the next one)", what, err)
				}
				cancel()
			}
		}
	}
	consume(60, "before the failover")
	committed, err := adm.FetchOffsets(testCtx(t, 20*time.Second), "failover-g")
	if err != nil || committed.Error() != nil {
		t.Fatalf("FetchOffsets before the failover: %v %v", err, committed.Error())
	}

	members := func(a *kadm.Client) ([]string, error) {
		gs, err := a.DescribeGroups(testCtx(t, 10*time.Second), "failover-g")
		if err == nil {
			err = gs.Error()
		}
		var ids []string
		for _, g := range gs {
			if g.State != "Stable" {
				return nil, fmt.Errorf("group is %s", g.State)
			}
			for _, m := range g.Members {
				ids = append(ids, m.MemberID)
			}
		}
		return ids, err
	}
	var before []string
	waitFor(t, 10*time.Second, "the group stable", func() (bool, string) {
		before, err = members(adm)
		return err == nil, fmt.Sprint(err)
	})

	old := leaderIdx()
	t.Logf("stopping node %d, the raft leader", old+1)
	closed[old] = true
	if err := nodes[old].Close(); err != nil {
		t.Errorf("close the leader: %v", err)
	}
	waitFor(t, 30*time.Second, "a new raft leader", func() (bool, string) { return leaderIdx() >= 0, "none yet" })
	t.Logf("node %d leads now", leaderIdx()+1)

	// A fresh admin client: franz-go keeps dialing a group's cached
	// coordinator while Metadata still lists the stopped node.
	admCl2, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl2.Close()
	var after kadm.OffsetResponses
	waitFor(t, 30*time.Second, "committed offsets from the new coordinator", func() (bool, string) {
		after, err = kadm.NewClient(admCl2).FetchOffsets(testCtx(t, 10*time.Second), "failover-g")
		if err == nil {
			err = after.Error()
		}
		return err == nil, fmt.Sprint(err)
	})
	committed.Each(func(o kadm.OffsetResponse) {
		if a, ok := after.Lookup(o.Topic, o.Partition); !ok || a.At != o.At {
			t.Errorf("%s/%d committed %d before the failover, %d (found %v) after", o.Topic, o.Partition, o.At, a.At, ok)
		}
	})

	// The new coordinator took the group over from its membership record:
	// the member carries on with its member id, without rejoining.
	afterIDs, err := members(kadm.NewClient(admCl2))
	if err != nil || fmt.Sprint(afterIDs) != fmt.Sprint(before) {
		t.Errorf("members after the failover %v (%v), before %v: the group was not taken over", afterIDs, err, before)
	}

	produce("after", 20)
	consume(120, "after the failover")
	for v, n := range seen {
		if n > 1 && v[:6] == "before" {
			t.Errorf("%s consumed %d times: committed offsets were lost in the failover", v, n)
		}
	}
}
