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
)

// groupCommitFixture commits offsets two ways: a franz-go group member
// (generation, member id, leader epoch) on one topic, and a group-less
// kadm commit with metadata on another. It returns what FetchOffsets must
// return for each group from then on.
func groupCommitFixture(t *testing.T, addr string) map[string]kadm.OffsetResponses {
	t.Helper()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "restart-member", 2, nil)
	createTopic(t, adm, "restart-standalone", 1, nil)
	produceN(t, addr, "restart-member", 2, 25, "r")

	cl := newKgo(t, addr,
		kgo.ConsumerGroup("restart-members"),
		kgo.ConsumeTopics("restart-member"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	got := 0
	for got < 50 {
		fs := cl.PollFetches(testCtx(t, 20*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (after %d of 50 records)", err, got)
		}
		got += len(fs.Records())
	}
	if err := cl.CommitUncommittedOffsets(testCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("group member commit: %v", err)
	}
	cl.Close()

	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "restart-standalone", Partition: 0, At: 42, LeaderEpoch: -1, Metadata: "standalone-metadata"})
	if resp, err := adm.CommitOffsets(testCtx(t, 10*time.Second), "restart-standalone", os); err != nil || resp.Error() != nil {
		t.Fatalf("standalone commit: %v %v", err, resp.Error())
	}

	want := map[string]kadm.OffsetResponses{}
	for _, g := range []string{"restart-members", "restart-standalone"} {
		o, err := adm.FetchOffsets(testCtx(t, 10*time.Second), g)
		if err != nil || o.Error() != nil {
			t.Fatalf("FetchOffsets %s: %v %v", g, err, o.Error())
		}
		want[g] = o
	}
	if o, _ := want["restart-members"].Lookup("restart-member", 1); o.At != 25 || o.LeaderEpoch < 0 {
		t.Fatalf("the member committed %+v for partition 1, want offset 25 with a leader epoch", o)
	}
	return want
}

// checkOffsetsSame fetches every group's offsets and compares them with
// want.
func checkOffsetsSame(t *testing.T, addr, when string, want map[string]kadm.OffsetResponses) {
	t.Helper()
	adm := newAdmin(t, addr)
	for g, w := range want {
		got, err := adm.FetchOffsets(testCtx(t, 20*time.Second), g)
		if err != nil || got.Error() != nil {
			t.Fatalf("%s: FetchOffsets %s: %v %v", when, g, err, got.Error())
		}
		w.Each(func(o kadm.OffsetResponse) {
			r, ok := got.Lookup(o.Topic, o.Partition)
			if !ok || r.At != o.At || r.LeaderEpoch != o.LeaderEpoch || r.Metadata != o.Metadata {
				t.Errorf("%s: group %s %s/%d: got %+v (found %v), want %+v", when, g, o.Topic, o.Partition, r.Offset, ok, o.Offset)
			}
		})
		if len(got.Offsets().Sorted()) != len(w.Offsets().Sorted()) {
			t.Errorf("%s: group %s has %d offsets, want %d", when, g, len(got.Offsets().Sorted()), len(w.Offsets().Sorted()))
		}
	}
}

// TestGroupOffsetsSurviveRestart commits offsets, stops the broker
// (node.Close, then kill -9 of a brokerd process) and checks that they are
// all there after it starts again on the same directory, and that a group
// consumer resumes from them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	t.Parallel()
	t.Run("graceful", func(t *testing.T) {
		t.Parallel()
		logs := &logBuffer{}
		dumpOnFailure(t, "broker logs", logs.String)
		cfg := node.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.KafkaAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.RaftAddr = "127.0.0.1:0"
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel()}))
		fastGroups(&cfg)
		start := func() *node.Node {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := node.Start(ctx, cfg)
			if err != nil {
				t.Fatalf("start node: %v", err)
			}
			return n
		}
		n := start()
		want := groupCommitFixture(t, cfg.KafkaAddr)
		if err := n.Close(); err != nil {
			t.Fatalf("close node: %v", err)
		}
		n = start()
		defer func() {
			if err := n.Close(); err != nil {
				t.Errorf("close node: %v", err)
			}
		}()
		checkOffsetsSame(t, cfg.KafkaAddr, "after node.Close and node.Start", want)

		// A member of the group resumes after the committed offsets.
		produceN(t, cfg.KafkaAddr, "restart-member", 2, 5, "new")
		cl := newKgo(t, cfg.KafkaAddr,
			kgo.ConsumerGroup("restart-members"),
			kgo.ConsumeTopics("restart-member"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(250*time.Millisecond),
		)
		got := 0
		for got < 10 {
			fs := cl.PollFetches(testCtx(t, 20*time.Second))
			if err := fs.Err0(); err != nil {
				t.Fatalf("poll after restart: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset < 25 {
					t.Errorf("after the restart the group re-read %s/%d@%d", r.Topic, r.Partition, r.Offset)
				}
				got++
			})
		}
		cl.Close() // before the node, which the deferred Close stops
	})

	t.Run("kill-9", func(t *testing.T) {
		t.Parallel()
		bp := newBrokerProc(t)
		bp.start()
		want := groupCommitFixture(t, bp.kafkaAddr())
		bp.kill()
		bp.start()
		checkOffsetsSame(t, bp.kafkaAddr(), "after kill -9 and restart", want)
	})
}
