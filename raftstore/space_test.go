package raftstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
)

func TestReserveFor(t *testing.T) {
	for _, c := range []struct {
		configured int64
		total      uint64
		seg        int
		want       uint64
	}{
		{configured: 1 << 20, total: 1 << 40, seg: 64 << 20, want: 1 << 20},
		{total: 64 << 20, seg: 2 << 20, want: 4 << 20},        // two segments
		{total: 1 << 30, seg: 1 << 20, want: 1 << 30 / 20},    // a 20th
		{total: 1 << 40, seg: 64 << 20, want: maxAutoReserve}, // capped
		{total: 0, seg: 64 << 20, want: 128 << 20},            // size unknown
	} {
		if got := reserveFor(c.configured, c.total, c.seg); got != c.want {
			t.Errorf("reserveFor(%d, %d, %d) = %d, want %d", c.configured, c.total, c.seg, got, c.want)
		}
	}
}

func TestSpaceGuard(t *testing.T) {
	g := newSpaceGuard(t.TempDir(), 100, testLogger())
	avail := uint64(1000)
	g.sample = func() (uint64, bool) { return avail, true }
	g.poll()
	if err := g.admit(); err != nil {
		t.Fatalf("1000 bytes free over a reserve of 100: %v", err)
	}
	avail = 99
	g.poll()
	if err := g.admit(); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "99 bytes free") {
		t.Fatalf("99 bytes free: %v", err)
	}
	avail = 1000
	g.poll()
	g.wait("append to t-0", syscall.ENOSPC)
	if err := g.admit(); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "append to t-0 waits") {
		t.Fatalf("a waiting append: %v", err)
	}
	g.done("append to t-0")
	if err := g.admit(); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	if st := g.stats(); st.Refused != 2 || st.Refusing || st.FreeBytes != 1000 || st.ReserveBytes != 100 {
		t.Fatalf("stats %+v", st)
	}
}

// TestApplyWaitsForSpace: an entry whose append meets a full disk (filled
// by someone else faster than the guard samples) is not failed, which
// would stop the node: apply waits, writes are refused meanwhile, and
// once space is freed the entry is applied and answered, and the node
// serves on, without a restart.
func TestApplyWaitsForSpace(t *testing.T) {
	dir := t.TempDir()
	mountTestTmpfs(t, dir, "48m")
	s := openTestStore(t, dir)
	t.Cleanup(func() { s.Close() }) // before the unmount
	// The guard never sees the disk fill: the append meets it first.
	s.fsm.space.mu.Lock()
	s.fsm.space.sample = func() (uint64, bool) { return 1 << 40, true }
	s.fsm.space.mu.Unlock()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "t", [16]byte{1}, 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, s, "t", 0, batchtest.NoProducer, "before")

	filler := fillTestDisk(t, dir)

	big := strings.Repeat("x", 256<<10)
	done := make(chan ProduceResult, 1)
	go func() { done <- produce(t, s, "t", 0, batchtest.NoProducer, big) }()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if err := s.StorageErr(); err != nil {
			if !strings.Contains(err.Error(), "append to t/0 waits for disk space") {
				t.Fatalf("StorageErr while apply waits: %v", err)
			}
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("StorageErr is nil while the append has no space")
		}
	}
	select {
	case r := <-done:
		t.Fatalf("produce on a full disk answered %+v while its entry waits", r)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := s.StartProduce(ctx, 0, "", nil).Wait(); !errors.Is(err, ErrStorage) {
		t.Fatalf("a produce while apply waits: %v, want ErrStorage", err)
	}
	select {
	case <-s.Failed():
		t.Fatalf("the node failed: %v", s.FailErr())
	default:
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Err != nil || r.BaseOffset != 1 {
			t.Fatalf("the waiting produce: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting produce was not answered 10 s after space was freed")
	}
	if err := s.StorageErr(); err != nil {
		t.Fatalf("StorageErr once space is back: %v", err)
	}
	if r := produce(t, s, "t", 0, batchtest.NoProducer, "after"); r.Err != nil || r.BaseOffset != 2 {
		t.Fatalf("produce after: %+v", r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	t.Cleanup(func() { s.Close() })
	l, _ := s.Log("t", 0)
	if n := len(readAll(t, l)); n != 3 {
		t.Fatalf("%d batches after a restart, want 3", n)
	}
}

// TestMarkerWaitDoesNotBlockReaders: a transaction marker that meets a
// full disk waits for space without holding txnMu, which every Fetch takes
// for the last stable offset: reads of other partitions go on meanwhile.
func TestMarkerWaitDoesNotBlockReaders(t *testing.T) {
	dir := t.TempDir()
	mountTestTmpfs(t, dir, "48m")
	s := openTestStore(t, dir)
	t.Cleanup(func() { s.Close() }) // before the unmount
	s.fsm.space.mu.Lock()
	s.fsm.space.sample = func() (uint64, bool) { return 1 << 40, true }
	s.fsm.space.mu.Unlock()
	ctx := context.Background()
	for _, n := range []string{"out", "other"} {
		if err := s.CreateTopic(ctx, n, [16]byte{byte(len(n))}, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	ip, err := s.InitTxnProducer(ctx, now, "tx-1", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPartitionsToTxn(ctx, now, "tx-1", ip.ProducerID, ip.ProducerEpoch, []TopicPartition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	if r := produceTxn(t, s, "tx-1", "out", 0, batchtest.Options{ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, Transactional: true}, "a"); r.Err != nil {
		t.Fatal(r.Err)
	}
	// End the segment at a page boundary, so that the marker needs a page
	// the full disk does not have.
	l, _ := s.Log("out", 0)
	over := int64(70)
	for i := 0; l.Size()%4096 != 0 && i < 40; i++ {
		v := 4096 - l.Size()%4096 - over
		if v < 1 {
			v += 4096
		}
		before := l.Size()
		produce(t, s, "out", 0, batchtest.NoProducer, strings.Repeat("y", int(v)))
		over = l.Size() - before - v
	}
	if l.Size()%4096 != 0 {
		t.Fatalf("could not end the segment at a page boundary: %d bytes", l.Size())
	}
	filler := fillTestDisk(t, dir)
	ended := make(chan error, 1)
	go func() { ended <- s.EndTxn(ctx, now, "tx-1", ip.ProducerID, ip.ProducerEpoch, true) }()
	for start := time.Now(); s.StorageErr() == nil; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the marker never waited for space")
		}
	}
	got := make(chan int64, 1)
	go func() { got <- s.LastStableOffset("other", 0) }()
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("LastStableOffset of another partition (every Fetch reads it) waited for the marker's disk space")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("EndTxn once space is back: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EndTxn not answered 10 s after space was freed")
	}
	if lso, end := s.LastStableOffset("out", 0), l.EndOffset(); lso != end {
		t.Fatalf("last stable offset %d after the commit, want the end offset %d", lso, end)
	}
}
