package raftstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

func outBatch(values ...string) []byte {
	var recs []log.Record
	for _, v := range values {
		recs = append(recs, log.Record{Timestamp: 1000, Key: []byte("k"), Value: []byte(v)})
	}
	return log.EncodeBatch(recs)
}

func deployTestProcessor(t *testing.T, s *Store) uint64 {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"in", "out"} {
		if err := s.CreateTopic(ctx, name, topic.NewID(), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		produce(t, s, "in", 0, batchtest.NoProducer, "x")
	}
	gen, err := s.DeployProcessor(ctx, DeployRequest{Name: "p", Spec: []byte(`{"name":"p"}`), Inputs: []string{"in"}, Outputs: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

// TestProcessorStep: a step moves the offsets, changes the state and
// appends the outputs at once; the same step again, a step of another
// generation, or one that does not start at the committed offsets is
// refused and changes nothing; all of it survives a restart.
func TestProcessorStep(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	gen := deployTestProcessor(t, s)
	step := func() *ProcStep {
		return &ProcStep{Name: "p", Generation: gen, Now: time.Now().UnixMilli(),
			Start: map[string]int64{"in/0": 0}, End: map[string]int64{"in/0": 3},
			Puts: []StateEntry{{Key: []byte("k"), Value: []byte(`{"count":3}`)}}, In: 3, Out: 2,
			Outputs: []ProduceBatch{{Topic: "out", Partition: 0, Data: outBatch("a", "b")}}}
	}
	if err := s.ApplyStep(ctx, step()); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		p, ok := s.Processor("p")
		if !ok || p.Offsets["in/0"] != 3 || p.Stats.RecordsIn != 3 || p.Stats.RecordsOut != 2 || p.Stats.Steps != 1 {
			t.Fatalf("%s: processor %+v", when, p)
		}
		v, ok, err := s.ProcessorState("p", []byte("k"))
		if err != nil || !ok || string(v) != `{"count":3}` {
			t.Fatalf("%s: state %q %v %v", when, v, ok, err)
		}
		if l, _ := s.Log("out", 0); l.EndOffset() != 2 {
			t.Fatalf("%s: output holds %d records", when, l.EndOffset())
		}
	}
	check(s, "after the step")
	// Replayed, fenced, and invalid steps change nothing.
	if err := s.ApplyStep(ctx, step()); !errors.Is(err, ErrProcessorFenced) {
		t.Fatalf("a replayed step: %v", err)
	}
	// A step built from the same state over other partitions is refused
	// too (the step sequence), and so is a step that moves nothing.
	other := step()
	other.Start, other.End = map[string]int64{}, map[string]int64{}
	other.Seq = 1
	if err := s.ApplyStep(ctx, other); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a step that moves nothing: %v", err)
	}
	empty := step()
	empty.Seq = 1
	empty.Start["in/0"], empty.End["in/0"] = 3, 3
	empty.Puts = []StateEntry{{Key: []byte{}, Value: []byte("x")}}
	if err := s.ApplyStep(ctx, empty); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a step with an empty state key: %v", err)
	}
	old := step()
	old.Generation--
	old.Start["in/0"] = 3
	if err := s.ApplyStep(ctx, old); !errors.Is(err, ErrProcessorFenced) {
		t.Fatalf("a step of another generation: %v", err)
	}
	bad := step()
	bad.Seq = 1
	bad.Start["in/0"], bad.End["in/0"] = 3, 4
	bad.Outputs = append(bad.Outputs, ProduceBatch{Topic: "in", Partition: 0, Data: outBatch("c")})
	if err := s.ApplyStep(ctx, bad); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a step writing to its input: %v", err)
	}
	past := step()
	past.Seq = 1
	past.Start["in/0"], past.End["in/0"] = 3, 99
	if err := s.ApplyStep(ctx, past); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a step past the input's end: %v", err)
	}
	check(s, "after refused steps")
	if err := s.SnapshotNow(); err != nil { // checkpoints, and puts the processors in a manifest
		t.Fatal(err)
	}
	del := step()
	del.Seq = 1
	del.Start["in/0"], del.End["in/0"] = 3, 5
	del.Puts, del.Deletes, del.Outputs = nil, [][]byte{[]byte("k")}, nil
	if err := s.ApplyStep(ctx, del); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ProcessorState("p", []byte("k")); ok {
		t.Fatal("a deleted key is still there")
	}
	s.crashForTest()
	s = openTestStore(t, dir)
	defer s.Close()
	if p, _ := s.Processor("p"); p.Offsets["in/0"] != 5 {
		t.Fatalf("after a crash: offsets %v", p.Offsets)
	}
	if _, ok, _ := s.ProcessorState("p", []byte("k")); ok {
		t.Fatal("after a crash: a deleted key is back")
	}
	// Deleting the processor takes its state; a redeploy starts afresh.
	if err := s.DeleteProcessor(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Processor("p"); ok {
		t.Fatal("deleted processor still listed")
	}
	if _, err := s.DeployProcessor(ctx, DeployRequest{Name: "p", Spec: []byte(`{}`), Inputs: []string{"in"}, Outputs: []string{"in"}}); !errors.Is(err, ErrInvalidProcessor) {
		t.Fatalf("a processor writing to its input: %v", err)
	}
}

// TestProcessorStateScan: a scan merges the committed state with the
// changes since the last checkpoint, in key order, deletes hidden.
func TestProcessorStateScan(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	gen := deployTestProcessor(t, s)
	put := func(from, to int64, puts []StateEntry, dels ...string) {
		t.Helper()
		st := &ProcStep{Name: "p", Generation: gen, Seq: from, Start: map[string]int64{"in/0": from}, End: map[string]int64{"in/0": to}, Puts: puts}
		for _, d := range dels {
			st.Deletes = append(st.Deletes, []byte(d))
		}
		if err := s.ApplyStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 1, []StateEntry{{Key: []byte("a/1"), Value: []byte("1")}, {Key: []byte("a/3"), Value: []byte("3")}, {Key: []byte("b/1"), Value: []byte("x")}})
	if err := s.SnapshotNow(); err != nil { // checkpoint: those are in bbolt now
		t.Fatal(err)
	}
	put(1, 2, []StateEntry{{Key: []byte("a/2"), Value: []byte("2")}, {Key: []byte("a/3"), Value: []byte("33")}}, "a/1")
	var got []string
	if err := s.ProcessorStateScan("p", []byte("a/"), func(k, v []byte) bool { got = append(got, string(k)+"="+string(v)); return true }); err != nil {
		t.Fatal(err)
	}
	if want := "a/2=2,a/3=33"; strings.Join(got, ",") != want {
		t.Fatalf("scan: %v, want %s", got, want)
	}
}
