package raftstore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

func openTuned(t *testing.T, dir string, tune func(*Config)) *Store {
	t.Helper()
	cfg := Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", Broker: BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: testLogger()}
	tune(&cfg)
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitLeader(ctx); err != nil {
		t.Fatalf("wait leader: %v", err)
	}
	return s
}

// TestSnapshotTrimsRaftLog: once enough is applied, the store takes a raft
// snapshot (a manifest) right after a checkpoint and raft trims its log to
// TrailingLogs entries, so a restart reads only the tail. Before, raft kept
// everything since its own snapshot every few minutes.
func TestSnapshotTrimsRaftLog(t *testing.T) {
	dir := t.TempDir()
	tune := func(c *Config) {
		c.CheckpointInterval = 20 * time.Millisecond
		c.SnapshotBytes = 4 << 10
		c.TrailingLogs = 10
	}
	s := openTuned(t, dir, tune)
	if err := s.CreateTopic(context.Background(), "s", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		produce(t, s, "s", 0, batchtest.NoProducer, strings.Repeat("x", 100))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		first, err := s.logs.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		last, _ := s.logs.LastIndex()
		if first > 1 && last-first < 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raft log not trimmed: first index %d, last %d, stats %v", first, last, s.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.crashForTest()
	s = openTuned(t, dir, tune)
	defer s.Close()
	if l, _ := s.Log("s", 0); l.EndOffset() != 200 {
		t.Fatalf("after restart: %d records, want 200", l.EndOffset())
	}
}

// TestSnapshotGapRefused: a raft snapshot newer than the FSM's checkpoint,
// with the commands in between gone from raft's log (as an interrupted
// snapshot install leaves it), stops start-up with a clear error instead
// of silently skipping those commands.
func TestSnapshotGapRefused(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if err := s.CreateTopic(context.Background(), "g", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, s, "g", 0, batchtest.NoProducer, "a")
	last, _ := s.logs.LastIndex()
	cfg := s.raft.GetConfiguration()
	if err := cfg.Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A snapshot received from a leader, 50 entries ahead, never restored.
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(dir, "raft"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, last+50, 2, cfg.Configuration(), 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(manifest{AppliedIndex: last + 50})
	sink.Write(append(snapHead(0, m), snapEnd...))
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", Broker: BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "never installed") {
		t.Fatalf("open with a snapshot gap: %v", err)
	}
}

// TestTrailingBoundedByBytes: with large entries, raft keeps fewer than
// TrailingLogs behind a snapshot, so the disk does not hold a second copy
// of gigabytes of recent data.
func TestTrailingBoundedByBytes(t *testing.T) {
	s := openTuned(t, t.TempDir(), func(c *Config) {
		c.CheckpointInterval = 20 * time.Millisecond
		c.SnapshotBytes = 16 << 10
		c.TrailingLogs = 1000
		c.TrailingBytes = 8 << 10
	})
	defer s.Close()
	if err := s.CreateTopic(context.Background(), "b", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		produce(t, s, "b", 0, batchtest.NoProducer, strings.Repeat("x", 1000))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		first, _ := s.logs.FirstIndex()
		last, _ := s.logs.LastIndex()
		if first > 1 && last-first < minTrailingLogs+50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raft log not trimmed by bytes: first index %d, last %d, trailing %d", first, last, s.raft.ReloadableConfig().TrailingLogs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
