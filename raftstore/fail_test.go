package raftstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// openTwoTopics opens a store in dir with topics t and u of one partition
// each, and one record in t-0.
func openTwoTopics(t *testing.T, dir string) *Store {
	t.Helper()
	s := openTestStore(t, dir)
	for _, name := range []string{"t", "u"} {
		if err := s.CreateTopic(context.Background(), name, topic.NewID(), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, s, "t", 0, batchtest.NoProducer, "a")
	return s
}

// waitCheckpoints waits until n checkpoints have committed since the store
// opened.
func waitCheckpoints(t *testing.T, s *Store, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.CheckpointStats().Count < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints, want %d", s.CheckpointStats().Count, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitFailed(t *testing.T, s *Store) error {
	t.Helper()
	select {
	case <-s.Failed():
		return s.FailErr()
	case <-time.After(5 * time.Second):
		t.Fatal("the state machine did not stop")
		return nil
	}
}

// TestStorageErrorStopsApply: an append that fails for a reason other than
// the batch's own bytes (here: the partition's files were closed under it,
// as a failing disk would leave them) stops the state machine. The entry
// is not counted as applied, nothing after it is applied, no checkpoint is
// taken, and a restart replays both entries. Before, the failed entry was
// answered with an error but counted as applied, so this replica silently
// lacked a batch the others had.
func TestStorageErrorStopsApply(t *testing.T) {
	dir := t.TempDir()
	s := openTwoTopics(t, dir)
	ctx := context.Background()
	checkpointed := s.fsm.applied
	count := s.CheckpointStats().Count
	s.fsm.checkpointDue.Store(true)
	produce(t, s, "u", 0, batchtest.NoProducer, "b")
	before := s.AppliedIndex()
	// The checkpoint commits in the background: let it land first.
	waitCheckpoints(t, s, count+1)

	// The disk fails under partition t-0.
	if err := s.fsm.partition("t", 0).log.Detach(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Produce(ctx, time.Now().UnixMilli(), []ProduceBatch{{Topic: "t", Partition: 0, Data: batchtest.New(batchtest.NoProducer, []byte("lost?"))}}); !errors.Is(err, ErrStorage) {
		t.Fatalf("produce on a failed disk: %v, want a storage error", err)
	}
	err := waitFailed(t, s)
	if err == nil || !strings.Contains(err.Error(), "append to t/0") {
		t.Fatalf("FailErr = %v", err)
	}
	// Nothing after it is applied, not even on a healthy partition.
	if _, err := s.Produce(ctx, time.Now().UnixMilli(), []ProduceBatch{{Topic: "u", Partition: 0, Data: batchtest.New(batchtest.NoProducer, []byte("after"))}}); !errors.Is(err, ErrStorage) {
		t.Fatalf("produce after the stop: %v", err)
	}
	if got := s.AppliedIndex(); got != before {
		t.Fatalf("applied index moved from %d to %d after the failure", before, got)
	}
	if _, err := s.fsm.Snapshot(); err == nil {
		t.Fatal("a stopped state machine took a snapshot")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if s.fsm.applied < checkpointed {
		t.Fatal("checkpoint went backwards")
	}

	// The fault is gone: a restart replays both entries.
	s = openTestStore(t, dir)
	defer s.Close()
	for _, tc := range []struct {
		topic string
		want  int64
	}{{"t", 2}, {"u", 2}} {
		l, _ := s.Log(tc.topic, 0)
		if got := l.EndOffset(); got != tc.want {
			t.Fatalf("%s-0 ends at %d after the restart, want %d", tc.topic, got, tc.want)
		}
	}
}

// TestUnknownCommandStops: a command type this version does not know (a
// newer version wrote it) stops the state machine with a message that says
// so, rather than being answered and skipped.
func TestUnknownCommandStops(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	f := s.raft.Apply([]byte{250, 1, 2, 3}, 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatalf("propose: %v", err)
	}
	err := waitFailed(t, s)
	if err == nil || !strings.Contains(err.Error(), "unknown command type 250") || !strings.Contains(err.Error(), "newer version") {
		t.Fatalf("FailErr = %v", err)
	}
	if got := s.AppliedIndex(); got >= f.Index() {
		t.Fatalf("unknown command at index %d counted as applied (applied index %d)", f.Index(), got)
	}
}

// TestEpochsRace reads a partition's leader epochs while apply records new
// ones; under -race it failed when apply appended without the lock that
// readers take.
func TestEpochsRace(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	if err := s.CreateTopic(context.Background(), "e", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, s, "e", 0, batchtest.NoProducer, "a")
	p := s.fsm.partition("e", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			s.EndOffsetForEpoch("e", 0, int32(i))
		}
	}()
	for i := int32(100); i < 2100; i++ {
		s.fsm.noteEpoch(p, i, int64(i))
	}
	<-done
	if e, off, _ := s.EndOffsetForEpoch("e", 0, 150); e != 150 || off != 151 {
		t.Fatalf("EndOffsetForEpoch(150) = %d, %d", e, off)
	}
}

// TestLeaderServesAfterBarrier: leading in raft is not enough to serve; a
// leader serves once a barrier in its term showed it has applied everything
// committed before it (a leader of an older term, even this node, is not).
func TestLeaderServesAfterBarrier(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	if !s.IsLeader() {
		t.Fatal("a confirmed leader does not serve")
	}
	term := s.raft.CurrentTerm()
	s.readyTerm.Store(term - 1) // as if confirmed in an earlier term only
	if s.IsLeader() {
		t.Fatal("serving before the barrier of the current term")
	}
	if err := s.confirmLeadership(); err != nil {
		t.Fatal(err)
	}
	if !s.IsLeader() || s.readyTerm.Load() != term {
		t.Fatal("not serving after the barrier")
	}
}

// TestMissingRecordsError: a partition whose segments lost records the
// checkpoint counts as durable refuses to start with a message that says
// what was found, what was expected, and what the operator can do.
func TestMissingRecordsError(t *testing.T) {
	dir := t.TempDir()
	s := openTwoTopics(t, dir)
	produce(t, s, "t", 0, batchtest.NoProducer, "b")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "t-0", "00000000000000000000.log")
	if err := os.Truncate(seg, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", Broker: BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: testLogger()})
	if err == nil {
		t.Fatal("a store whose segments lost checkpointed records opened")
	}
	for _, want := range []string{"partition t-0", "end at offset 0", "up to 2", filepath.Join(dir, "t-0"), "rebuild from its peers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
