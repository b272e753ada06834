package log

import (
	"fmt"
	"runtime"
	"testing"
)

// TestSyncSeesHeldSealedFailure: a roll's syncHeldSealed fails while a Sync
// is fsyncing outside wmu. The failure is final (syncErr), so the Sync in
// flight must fail too and record no recovery point: an fsync error is
// reported once, to whichever fsync comes first.
func TestSyncSeesHeldSealedFailure(t *testing.T) {
	c := NewOpenCache(1000 * filesPerSegment)
	dir := t.TempDir()
	l, err := c.Open(dir, tinyConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	appendSingles(t, l, 3, 1, tsIndex)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	appendSingles(t, l, 1, 1, tsIndex) // dirty active segment A
	before, _, _ := readCheckpoint(dir)

	l.wmu.Lock()
	a := l.active()
	l.wmu.Unlock()
	res := make(chan error, 1)
	go func() { res <- l.Sync() }()
	// Wait until Sync has chosen its segments (A clean, pinned) and left wmu.
	for {
		l.wmu.Lock()
		if !a.dirty {
			break
		}
		l.wmu.Unlock()
		runtime.Gosched()
	}
	// Sync is fsyncing or waiting for wmu. The FSM rolls 40 segments;
	// the disk fails under one of them (fsync error).
	var failed *segment
	for i := 0; i < 40 && l.syncErr == nil; i++ {
		b := simpleBatch(t, 1, 1, tsIndex(100+i))
		h, _ := ParseBatchHeader(b)
		if _, err := l.appendLocked(b, h, tsIndex(100+i)); err != nil {
			l.wmu.Unlock()
			t.Fatal(err)
		}
		if i == 5 {
			failed = l.active()
		}
		if i == 6 {
			failed.log.Close() // its fsync will fail
		}
	}
	syncErr := l.syncErr
	l.wmu.Unlock()
	if syncErr == nil {
		t.Fatal("setup: syncHeldSealed did not fail")
	}
	t.Logf("syncErr set during the Sync: %v", syncErr)
	err = <-res
	after, _, _ := readCheckpoint(dir)
	t.Logf("Sync returned %v; recovery point %d -> %d", err, before.RecoveryPoint, after.RecoveryPoint)
	if err == nil || after.RecoveryPoint != before.RecoveryPoint {
		t.Errorf("%s", fmt.Sprintf("a Sync in flight returned %v and recorded recovery point %d after the log's fsync failed (was %d)", err, after.RecoveryPoint, before.RecoveryPoint))
	}
	l.Detach()
}
