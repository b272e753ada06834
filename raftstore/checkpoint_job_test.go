package raftstore

import (
	"context"
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
