package raftstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// storeWithData opens a store in dir with topic t of one partition holding
// a few batches, and closes it cleanly: everything is flushed, below the
// recovery point. It returns the partition's segment file.
func storeWithData(t *testing.T, dir string) string {
	t.Helper()
	s := openTestStore(t, dir)
	if err := s.CreateTopic(context.Background(), "t", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		produce(t, s, "t", 0, batchtest.NoProducer, "some value", "another value")
	}
	l, _ := s.Log("t", 0)
	segs := l.Segments()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return segs[0].Path
}

// waitVerified waits for background verification to complete.
func waitVerified(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Verified() {
		if time.Now().After(deadline) {
			t.Fatal("background verification did not complete")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBackgroundVerification(t *testing.T) {
	dir := t.TempDir()
	seg := storeWithData(t, dir)
	st, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, dir)
	defer s.Close()
	waitVerified(t, s)
	if v := s.VerifyStats(); v.Bytes != st.Size() || v.Damaged != 0 {
		t.Fatalf("verify stats %+v; want the segment's %d bytes, none damaged", v, st.Size())
	}
	select {
	case <-s.Failed():
		t.Fatalf("store failed: %v", s.FailErr())
	default:
	}
}

// TestDamagedSegmentStopsNode: a bit flipped in a flushed batch is found by
// background verification: the node stops with an error that says what,
// where and what to do, writes the marker, and refuses to start while the
// marker exists; the damaged batch is never served meanwhile.
func TestDamagedSegmentStopsNode(t *testing.T) {
	dir := t.TempDir()
	seg := storeWithData(t, dir)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(log.BatchHeaderSize + 3) // in the first batch's records: CRC-covered
	b[at] ^= 0x08
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}

	s := openTestStore(t, dir)
	err = waitFailed(t, s)
	l, _ := s.Log("t", 0)
	if data, rerr := l.Read(0, 1<<20); !errors.Is(rerr, log.ErrDamaged) || data != nil {
		t.Fatalf("Read: %d bytes, %v; want ErrDamaged", len(data), rerr)
	}
	if s.Verified() {
		t.Fatal("a damaged store reports itself verified")
	}
	if err := s.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	for _, want := range []string{"damaged partition data", seg, "move this node's data directory aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("failure %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, ErrStorage) || !errors.Is(err, log.ErrDamaged) {
		t.Fatalf("failure %v: want ErrStorage and log.ErrDamaged", err)
	}
	marker := filepath.Join(dir, damageMarker)
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatalf("no marker: %v", serr)
	}

	// While the marker exists the node refuses to start.
	_, err = Open(Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", Logger: testLogger()})
	if err == nil || !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), marker) ||
		!strings.Contains(err.Error(), "move this node's data directory aside") || !strings.Contains(err.Error(), seg) {
		t.Fatalf("Open with the marker: %v", err)
	}
	t.Logf("refused: %v", err)
}

func TestVerifyPacer(t *testing.T) {
	p := newVerifyPacer(100 << 20) // 100 MiB/s
	began := time.Now()
	for range 10 {
		if err := p.pace(context.Background(), 2<<20); err != nil {
			t.Fatal(err)
		}
	}
	// 20 MiB at 100 MiB/s: 200 ms, less up to a second's saved credit
	// (none here: the pacer was just made).
	if took := time.Since(began); took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("20 MiB at 100 MiB/s took %v", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.pace(ctx, 1<<30); !errors.Is(err, context.Canceled) {
		t.Fatalf("pace with a cancelled context: %v", err)
	}
	if err := newVerifyPacer(-1).pace(context.Background(), 1<<40); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotDoesNotShipDamage: a snapshot sends a partition's segment
// files only once they are checked: a flushed segment with a flipped bit,
// not yet reached by background verification, fails the transfer (and
// stops the node) instead of being sent to a follower, which was then
// rebuilt from it, and refused to start, again and again.
func TestSnapshotDoesNotShipDamage(t *testing.T) {
	dir := t.TempDir()
	seg := storeWithData(t, dir)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[log.BatchHeaderSize+3] ^= 0x08
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := openTuned(t, dir, func(c *Config) { c.VerifyBytesPerSec = 1 }) // background checks crawl
	defer s.Close()
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	list, err := s.snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("list snapshots: %v", err)
	}
	_, rc, err := s.snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = io.ReadAll(rc)
	if !errors.Is(err, log.ErrDamaged) {
		t.Fatalf("streaming a snapshot with a damaged segment: %v, want ErrDamaged", err)
	}
	waitFailed(t, s)
}
