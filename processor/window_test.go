package processor

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// harness runs records through a pipeline step by step, committing each
// step's state as the store would.
type harness struct {
	now       int64           // the leader's clock for the next step
	unread    map[string]bool // input partitions with unread input at the next step
	t         *testing.T
	p         *pipeline
	committed memState
}

func newHarness(t *testing.T, stages ...Stage) *harness {
	t.Helper()
	return &harness{t: t, p: compileStages(t, stages...), committed: memState{}}
}

type in struct {
	key       string
	ts        int64
	partition int32
}

// step processes recs as one step and returns what came out (flushes
// included) as "key value" strings, sorted, and the records that were late.
func (h *harness) step(recs ...in) (out []string, late []string) {
	h.t.Helper()
	st := newStepState(h.committed.get, h.committed.scan)
	st.now = h.now
	st.unread = h.unread
	h.p.reset() // as the runner does at each step
	for _, r := range recs {
		err := h.p.run(st, 0, Record{Key: []byte(r.key), Value: []byte(`{}`), Timestamp: r.ts, Topic: "in", Partition: r.partition},
			func(o Record) error { out = append(out, string(o.Key)+" "+string(o.Value)); return nil })
		switch {
		case errors.Is(err, errLate):
			st.dropRecord()
			late = append(late, fmt.Sprintf("%s@%d", r.key, r.ts))
		case err != nil:
			h.t.Fatal(err)
		default:
			st.commitRecord()
		}
	}
	for i, op := range h.p.ops {
		if f, ok := op.(Flusher); ok {
			if err := f.Flush(stageState{st, stagePrefix(i)}, func(o Record) { out = append(out, string(o.Key)+" "+string(o.Value)) }); err != nil {
				h.t.Fatal(err)
			}
			st.commitRecord()
		}
	}
	for k, v := range st.step {
		if v == nil {
			delete(h.committed, k)
		} else {
			h.committed[k] = v
		}
	}
	sort.Strings(out)
	return out, late
}

func win(key string, start, end int64, count int) string {
	b, _ := json.Marshal(map[string]any{"window_start": start, "window_end": end, "count": count})
	return key + " " + string(b)
}

func windowStages(w WindowSpec) []Stage {
	return []Stage{{KeyBy: "key"}, {Window: &w}, {Aggregate: &AggregateSpec{Op: "count"}}}
}

func TestTumblingWindow(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "tumbling", Size: Duration(10 * time.Second), Lateness: Duration(2 * time.Second)})...)
	// b at 8 s is within the lateness of a's 9 s.
	out, _ := h.step(in{"a", 1000, 0}, in{"a", 9000, 0}, in{"b", 8000, 0})
	if len(out) != 0 {
		t.Fatalf("emitted before the watermark passed: %v", out)
	}
	// Event time 12 s: the watermark is 10 s, the end of [0, 10 s).
	out, _ = h.step(in{"a", 12000, 0})
	if want := []string{win("a", 0, 10000, 2), win("b", 0, 10000, 1)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v\nwant %v", out, want)
	}
	// Behind the watermark: late. Once emitted, a window is not again.
	out, late := h.step(in{"a", 7000, 0})
	if len(out) != 0 || len(late) != 1 {
		t.Fatalf("a late record: out %v late %v", out, late)
	}
	out, _ = h.step(in{"a", 25000, 0})
	if want := []string{win("a", 10000, 20000, 1)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
}

func TestHoppingWindow(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "hopping", Size: Duration(10 * time.Second), Slide: Duration(5 * time.Second)})...)
	h.step(in{"a", 7000, 0})
	out, _ := h.step(in{"a", 16000, 0})
	// 7 s is in [0,10) and [5,15); the watermark 16 s closes both.
	if want := []string{win("a", 0, 10000, 1), win("a", 5000, 15000, 1)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
	out, _ = h.step(in{"a", 40000, 0})
	// 16 s is in [10,20) and [15,25).
	if want := []string{win("a", 10000, 20000, 1), win("a", 15000, 25000, 1)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
}

func TestSessionWindow(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "session", Gap: Duration(5 * time.Second), Lateness: Duration(10 * time.Second)})...)
	h.step(in{"a", 1000, 0}, in{"a", 4000, 0}) // [1 s, 9 s)
	h.step(in{"a", 12000, 0})                  // [12 s, 17 s), apart
	// 8 s reaches both: [8 s, 13 s) touches [1, 9) and [12, 17).
	if _, late := h.step(in{"a", 8000, 0}); len(late) != 0 {
		t.Fatalf("late: %v", late)
	}
	out, _ := h.step(in{"z", 30000, 0})
	if want := []string{win("a", 1000, 17000, 4)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
}

// TestWatermarkAcrossPartitions: the watermark is the least over the
// partitions that had records, so a slow partition holds windows open.
func TestWatermarkAcrossPartitions(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "tumbling", Size: Duration(10 * time.Second)})...)
	h.step(in{"a", 1000, 0}, in{"a", 2000, 1})
	out, _ := h.step(in{"a", 50000, 0})
	if len(out) != 0 {
		t.Fatalf("partition 1 (at 2 s) did not hold the window open: %v", out)
	}
	out, _ = h.step(in{"a", 11000, 1})
	if want := []string{win("a", 0, 10000, 2)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
}

func TestWindowSpecErrors(t *testing.T) {
	bad := []WindowSpec{
		{Type: "tumbling"},
		{Type: "tumbling", Size: Duration(time.Second), Gap: Duration(time.Second)},
		{Type: "hopping", Size: Duration(time.Second), Slide: Duration(2 * time.Second)},
		{Type: "session"},
		{Type: "sliding", Size: Duration(time.Second)},
		{Type: "tumbling", Size: Duration(time.Second), Time: "value.ts +"},
	}
	for _, w := range bad {
		s := &Spec{Name: "t", Inputs: []string{"in"}, Output: "o", Stages: windowStages(w)}
		if _, err := compile(s); err == nil {
			t.Errorf("%+v accepted", w)
		}
	}
	s := &Spec{Name: "t", Inputs: []string{"in"}, Output: "o", Stages: []Stage{{Window: &WindowSpec{Type: "tumbling", Size: Duration(time.Second)}}}}
	if _, err := compile(s); err == nil || !strings.Contains(err.Error(), "followed by an aggregate") {
		t.Errorf("a window without an aggregate: %v", err)
	}
}

// TestIdlePartition: with idle set, a partition whose event time stops
// growing stops holding the watermark back after that long on the
// leader's clock; without it, it holds it forever.
func TestIdlePartition(t *testing.T) {
	for _, idle := range []time.Duration{0, 30 * time.Second} {
		h := newHarness(t, windowStages(WindowSpec{Type: "tumbling", Size: Duration(10 * time.Second), Idle: Duration(idle)})...)
		h.now = 1_000_000
		h.step(in{"a", 1000, 0}, in{"a", 2000, 1})
		h.now += 60_000 // partition 1 goes quiet for a minute
		out, _ := h.step(in{"a", 50000, 0})
		if idle == 0 && len(out) != 0 {
			t.Fatalf("without idle, a quiet partition let the window close: %v", out)
		}
		if idle > 0 {
			if want := []string{win("a", 0, 10000, 2)}; strings.Join(out, "|") != strings.Join(want, "|") {
				t.Fatalf("with idle: got %v, want %v", out, want)
			}
		}
	}
}

// TestBacklogHoldsWatermark: a partition with unread input and no event
// time yet holds the watermark, so reading one partition's backlog first
// cannot make the other's older records late; and the watermark never
// goes back, so no window is emitted twice.
func TestBacklogHoldsWatermark(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "tumbling", Size: Duration(10 * time.Second)})...)
	h.unread = map[string]bool{"in/0": true, "in/1": true}
	out, late := h.step(in{"a", 50000, 0}) // partition 0's backlog first
	if len(out) != 0 || len(late) != 0 {
		t.Fatalf("out %v late %v", out, late)
	}
	out, late = h.step(in{"a", 1000, 1}, in{"a", 60000, 1})
	if len(late) != 0 {
		t.Fatalf("partition 1's older record was late: %v", late)
	}
	if want := []string{win("a", 0, 10000, 1)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("got %v, want %v", out, want)
	}
	// A partition joining with older event times cannot pull the
	// watermark back and reopen an emitted window.
	h.unread = map[string]bool{"in/2": true}
	h.step(in{"a", 2000, 2})
	out, late = h.step(in{"a", 3000, 2})
	if len(out) != 0 || len(late) != 1 {
		t.Fatalf("after a partition joined with older times: out %v late %v", out, late)
	}
}

// TestWatermarkOf: the watermark over partitions' greatest event times, as
// a table.
func TestWatermarkOf(t *testing.T) {
	times := map[string]partTime{wmPrefix + "in/0": {50_000, 5000}, wmPrefix + "in/1": {20_000, 1000}}
	for _, c := range []struct {
		name       string
		idle, late int64
		now        int64
		unread     map[string]bool
		floor      int64
		hasFloor   bool
		want       int64
		ok         bool
	}{
		{name: "least of the partitions", now: 6000, want: 20_000, ok: true},
		{name: "minus the lateness", now: 6000, late: 5000, want: 15_000, ok: true},
		{name: "never below the floor", now: 6000, floor: 30_000, hasFloor: true, want: 30_000, ok: true},
		{name: "an idle partition stops counting", idle: 2000, now: 4000, want: 50_000, ok: true},
		{name: "idle is more than the duration", idle: 2000, now: 3000, want: 20_000, ok: true},
		{name: "every partition idle: the greatest", idle: 2000, now: 8000, late: 1000, want: 49_000, ok: true},
		{name: "without idle: the least", now: 1_000_000, want: 20_000, ok: true},
		{name: "unread partition without a time holds it", now: 6000, unread: map[string]bool{"in/2": true}, floor: 7, hasFloor: true, want: 7, ok: true},
		{name: "unread and no floor: none", now: 6000, unread: map[string]bool{"in/2": true}},
	} {
		o := &windowOp{idle: c.idle, late: c.late}
		wm, ok := o.watermarkOf(times, c.now, c.unread, c.floor, c.hasFloor)
		if wm != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, wm, ok, c.want, c.ok)
		}
	}
}

// TestBacklogIsNotIdle: a partition whose records wait unread is not
// idle, however long ago it was last read (a paused or lagging processor),
// so its waiting records are not late.
func TestBacklogIsNotIdle(t *testing.T) {
	h := newHarness(t, windowStages(WindowSpec{Type: "tumbling", Size: Duration(10 * time.Second), Idle: Duration(30 * time.Second)})...)
	h.now = 1_000_000
	h.step(in{"a", 1000, 0}, in{"b", 25000, 1})
	h.now += 60_000 // both partitions unread for a minute
	h.unread = map[string]bool{"in/0": true}
	out, late := h.step(in{"a", 2000, 0}, in{"a", 3000, 0})
	if len(late) != 0 || len(out) != 0 {
		t.Fatalf("partition 0's waiting records: out %v, late %v", out, late)
	}
	// Partition 0, just read, holds the watermark at 3 s; once it too has
	// been idle for 30 s, the watermark reaches the greatest time, 25 s.
	h.unread = nil
	if out, _ = h.step(); len(out) != 0 {
		t.Fatalf("partition 0 idle too early: %v", out)
	}
	h.now += 31_000
	out, _ = h.step()
	if want := []string{win("a", 0, 10000, 3)}; strings.Join(out, "|") != strings.Join(want, "|") {
		t.Fatalf("after the backlog: %v, want %v", out, want)
	}
}
