package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
)

// TestCheckpointInFlight: while a checkpoint's commit is held up, apply
// goes on (produce, processor steps, a processor redeploy), readers see
// every change, including the state the checkpoint is writing, and once
// it lands and the store restarts, everything is there.
func TestCheckpointInFlight(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	gen := deployTestProcessor(t, s)
	step := func(seq, from, to int64, puts []StateEntry, deletes ...string) *ProcStep {
		st := &ProcStep{Name: "p", Generation: gen, Seq: seq, Now: time.Now().UnixMilli(),
			Start: map[string]int64{"in/0": from}, End: map[string]int64{"in/0": to}, Puts: puts, In: to - from}
		for _, k := range deletes {
			st.Deletes = append(st.Deletes, []byte(k))
		}
		return st
	}
	if err := s.ApplyStep(ctx, step(0, 0, 1, []StateEntry{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("1")}})); err != nil {
		t.Fatal(err)
	}

	hold, held := make(chan struct{}), make(chan struct{}, 1)
	testBeforeCommit = func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-hold
	}
	released := false
	release := func() {
		if !released {
			released = true
			testBeforeCommit = nil
			close(hold)
		}
	}
	defer release()
	count := s.CheckpointStats().Count
	s.fsm.checkpointDue.Store(true)
	produce(t, s, "in", 0, batchtest.NoProducer, "y")
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("no checkpoint started")
	}
	// Apply goes on while the commit waits.
	done := make(chan error, 1)
	go func() {
		if err := s.ApplyStep(ctx, step(1, 1, 2, []StateEntry{{Key: []byte("a"), Value: []byte("2")}}, "b")); err != nil {
			done <- err
			return
		}
		_, err := s.Produce(ctx, time.Now().UnixMilli(), []ProduceBatch{{Topic: "in", Partition: 0, Data: batchtest.New(batchtest.NoProducer, []byte("z"))}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("apply waited for the checkpoint's commit")
	}
	state := func(key, want string) {
		t.Helper()
		v, ok, err := s.ProcessorState("p", []byte(key))
		if err != nil || (want == "") == ok || string(v) != want {
			t.Fatalf("state %q = %q (%v, %v), want %q", key, v, ok, err, want)
		}
	}
	state("a", "2")
	state("b", "")
	release()
	deadline := time.Now().Add(5 * time.Second)
	for s.CheckpointStats().Count <= count {
		if time.Now().After(deadline) {
			t.Fatal("the checkpoint did not land")
		}
		time.Sleep(time.Millisecond)
	}
	// The commit wrote a=1, b=1; memory still holds the newer a=2, b
	// deleted.
	state("a", "2")
	state("b", "")
	end := func() int64 { l, _ := s.Log("in", 0); return l.EndOffset() }()
	s.crashForTest()
	s = openTestStore(t, dir)
	defer s.Close()
	if l, _ := s.Log("in", 0); l.EndOffset() != end {
		t.Fatalf("after a crash the input ends at %d, want %d", l.EndOffset(), end)
	}
	state("a", "2")
	state("b", "")
}

// TestCheckpointedKeepsNewerDelta: forgetting what a commit wrote keeps
// keys changed since, and keeps everything of a processor dropped since.
func TestCheckpointedKeepsNewerDelta(t *testing.T) {
	tbl := newProcTable()
	tbl.delta["p"] = map[string][]byte{"a": []byte("1"), "b": nil, "c": []byte("3")}
	tbl.delta["q"] = map[string][]byte{"x": []byte("1")}
	tbl.drop("r")
	tbl.mu.Lock()
	c := procCapture{delta: map[string]map[string][]byte{"p": {"a": []byte("1"), "b": nil, "c": []byte("3")}, "q": {"x": []byte("1")}}, dropped: map[string]uint64{"r": tbl.dropped["r"]}}
	tbl.mu.Unlock()
	// Since the capture: p's c changed, q was dropped and refilled, r
	// dropped again.
	tbl.delta["p"]["c"] = []byte("4")
	tbl.drop("q")
	tbl.delta["q"] = map[string][]byte{"x": []byte("1")}
	tbl.drop("r")
	tbl.checkpointed(&c)
	if _, ok := tbl.delta["p"]["a"]; ok {
		t.Fatal("a committed key stayed")
	}
	if _, ok := tbl.delta["p"]["b"]; ok {
		t.Fatal("a committed delete stayed")
	}
	if string(tbl.delta["p"]["c"]) != "4" {
		t.Fatal("a key changed since the capture was forgotten")
	}
	if string(tbl.delta["q"]["x"]) != "1" || tbl.dropped["q"] == 0 {
		t.Fatal("a processor dropped since the capture lost its new state or its drop")
	}
	if tbl.dropped["r"] == 0 {
		t.Fatal("a drop made since the capture was forgotten")
	}
}

// TestCloseAfterFailedCheckpoint: a checkpoint that fails in the
// background stops the node at once; Close, called before apply sees it,
// treats the FSM as stopped (logs detached, no flush, no checkpoint).
func TestCloseAfterFailedCheckpoint(t *testing.T) {
	s := openTwoTopics(t, t.TempDir())
	u := s.fsm.partition("u", 0)
	var once sync.Once
	testBeforeCommit = func() {
		// The disk fails under u-0: the job's sync of it fails.
		once.Do(func() { _ = u.log.Detach() })
	}
	defer func() { testBeforeCommit = nil }()
	s.fsm.checkpointDue.Store(true)
	produce(t, s, "u", 0, batchtest.NoProducer, "b")
	if err := waitFailed(t, s); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Fatalf("FailErr = %v", err)
	}
	s.Close()
	if !s.fsm.stopped {
		t.Fatal("Close after a failed checkpoint closed the logs as a healthy node's")
	}
}

// TestScanPages: a scan over more committed entries than a page merges
// the changes since the checkpoint in key order across page boundaries,
// and its callback may read state (a nested read between pages).
func TestScanPages(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	gen := deployTestProcessor(t, s)
	want := map[string]string{}
	var puts []StateEntry
	for i := range 3*scanPage + 10 {
		k := fmt.Sprintf("k%04d", i)
		puts = append(puts, StateEntry{Key: []byte(k), Value: []byte("1")})
		want[k] = "1"
	}
	st := &ProcStep{Name: "p", Generation: gen, Now: time.Now().UnixMilli(), Start: map[string]int64{"in/0": 0}, End: map[string]int64{"in/0": 1}, Puts: puts, In: 1}
	if err := s.ApplyStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.SnapshotNow(); err != nil { // checkpoints: all of it in bbolt
		t.Fatal(err)
	}
	// Changes since: deletes, updates, and new keys between committed
	// ones and past the last, some right at page boundaries.
	st = &ProcStep{Name: "p", Generation: gen, Seq: 1, Now: time.Now().UnixMilli(), Start: map[string]int64{"in/0": 1}, End: map[string]int64{"in/0": 2}, In: 1}
	for i := 0; i < 3*scanPage+10; i += 7 {
		k := fmt.Sprintf("k%04d", i)
		st.Deletes = append(st.Deletes, []byte(k))
		delete(want, k)
	}
	for _, i := range []int{1, scanPage - 1, scanPage, scanPage + 1, 2 * scanPage} {
		k := fmt.Sprintf("k%04d", i)
		st.Puts = append(st.Puts, StateEntry{Key: []byte(k), Value: []byte("2")}, StateEntry{Key: []byte(k + "x"), Value: []byte("3")})
		want[k], want[k+"x"] = "2", "3"
	}
	st.Puts = append(st.Puts, StateEntry{Key: []byte("k9999"), Value: []byte("4")})
	want["k9999"] = "4"
	if err := s.ApplyStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	var keys []string
	err := s.ProcessorStateScan("p", []byte("k"), func(k, v []byte) bool {
		if string(v) != want[string(k)] {
			t.Fatalf("%s = %q, want %q", k, v, want[string(k)])
		}
		if got, ok, err := s.ProcessorState("p", k); err != nil || !ok || !bytes.Equal(got, v) {
			t.Fatalf("read of %s inside the scan: %q %v %v", k, got, ok, err)
		}
		keys = append(keys, string(k))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(keys) || len(keys) != len(want) {
		t.Fatalf("scanned %d keys (sorted %v), want %d", len(keys), slices.IsSorted(keys), len(want))
	}
}
