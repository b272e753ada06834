package log

import (
	"sync"
	"testing"
)

// Sync records the recovery point as of its call and leaves the segments
// it synced clean, while appends made during it stay dirty.
func TestSyncRecordsRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 20, 150, tsIndex)
	end := l.EndOffset()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	c, found, err := readCheckpoint(dir)
	if err != nil || !found || c.RecoveryPoint != end {
		t.Fatalf("checkpoint %+v (found %v, %v), want recovery point %d", c, found, err, end)
	}
	for _, s := range l.segs {
		if s.dirty {
			t.Fatalf("segment %d still dirty after Sync", s.base)
		}
	}
	more := appendBatches(t, l, 3, 150, tsIndex)
	if !l.segs[len(l.segs)-1].dirty {
		t.Fatal("an append after Sync left the active segment clean")
	}
	// A crash now keeps everything: the reopened log trusts the synced
	// prefix and scans the rest.
	crash(t, l)
	l2 := openLog(t, dir, smallConfig())
	checkContents(t, l2, append(batches, more...))
}

// Appends, reads and retention go on while Sync runs (the race detector
// checks the writer state it shares), and every Sync succeeds.
func TestSyncConcurrent(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	appendBatches(t, l, 10, 150, tsIndex)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Append(simpleBatch(t, 1+i%3, 150, tsIndex(i)), tsIndex(i)); err != nil {
				t.Error(err)
				return
			}
			if i%40 == 39 {
				// Retention removes whole segments under a running Sync.
				if err := l.AdvanceStartOffset(l.EndOffset() - 5); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for range 200 {
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segs {
		if s.dirty {
			t.Fatalf("segment %d dirty after the last Sync", s.base)
		}
	}
}

// A truncation while Sync runs keeps the recovery point at or below the
// truncated end.
func TestSyncAfterTruncate(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 20, 150, tsIndex)
	l.wmu.Lock()
	truncations := l.truncations
	l.wmu.Unlock()
	if err := l.Truncate(batches[5].base); err != nil {
		t.Fatal(err)
	}
	if l.truncations == truncations {
		t.Fatal("Truncate did not count")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	c, _, err := readCheckpoint(dir)
	if err != nil || c.RecoveryPoint > batches[5].base {
		t.Fatalf("recovery point %d past the truncated end %d (%v)", c.RecoveryPoint, batches[5].base, err)
	}
}

// A failed Sync is final: Flush and Close return its error and never
// record a recovery point over the bytes it could not sync.
func TestSyncFailureIsFinal(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	appendBatches(t, l, 20, 150, tsIndex)
	before, _, _ := readCheckpoint(dir)
	// The disk fails under the active segment (its file closed, so its
	// fsync fails while the segment is still the log's).
	l.segs[len(l.segs)-1].log.Close()
	if err := l.Sync(); err == nil {
		t.Fatal("Sync over a failed file succeeded")
	}
	if err := l.Flush(); err == nil {
		t.Fatal("Flush after a failed Sync succeeded")
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close after a failed Sync succeeded")
	}
	after, _, _ := readCheckpoint(dir)
	if after.RecoveryPoint != before.RecoveryPoint {
		t.Fatalf("recovery point moved from %d to %d after a failed sync", before.RecoveryPoint, after.RecoveryPoint)
	}
}
