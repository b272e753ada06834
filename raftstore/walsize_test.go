package raftstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft-wal"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

func TestWALSegmentSize(t *testing.T) {
	for _, tc := range []struct {
		total uint64
		ok    bool
		want  int
	}{
		{0, false, wal.DefaultSegmentSize},
		{100 << 30, true, wal.DefaultSegmentSize},
		{2 << 30, true, wal.DefaultSegmentSize},
		{1 << 30, true, 32 << 20},
		{64 << 20, true, 2 << 20},
		{8 << 20, true, minWALSegment},
	} {
		if got := walSegmentFor(tc.total, tc.ok); got != tc.want {
			t.Errorf("walSegmentFor(%d, %v) = %d, want %d", tc.total, tc.ok, got, tc.want)
		}
	}
	if got := walSegmentSize(5<<20, t.TempDir()); got != 5<<20 {
		t.Errorf("a configured size was not used: %d", got)
	}
	if got := walSegmentSize(0, t.TempDir()); got < minWALSegment || got > wal.DefaultSegmentSize {
		t.Errorf("sized from this disk: %d", got)
	}
}

// TestSmallWALSegments: a store whose raft-wal segments are 1 MiB rolls
// through many of them, entries larger than a segment included, and
// keeps every record across a restart.
func TestSmallWALSegments(t *testing.T) {
	dir := t.TempDir()
	open := func() *Store {
		s, err := Open(Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", WALSegmentBytes: 1 << 20,
			Broker: BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.WaitLeader(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	if err := s.CreateTopic(context.Background(), "t", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 300<<10)
	for range 12 {
		produce(t, s, "t", 0, batchtest.NoProducer, big, big, big, big, big) // 1.5 MiB entries
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "raft", "wal", "*.wal"))
	if len(segs) < 4 {
		t.Fatalf("%d raft-wal segments after 18 MiB of entries in 1 MiB segments", len(segs))
	}
	s.crashForTest()
	s = open()
	defer s.Close()
	if l, _ := s.Log("t", 0); l.EndOffset() != 60 {
		t.Fatalf("after a restart the log ends at %d, want 60", l.EndOffset())
	}
}
