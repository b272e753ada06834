package fetchsession

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

func part(topic string, p int32, off int64) Partition {
	return Partition{Key: Key{Topic: topic, Partition: p}, Params: Params{FetchOffset: off, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}
}

// quiet is a result with nothing new: the partition's high watermark hw.
func quiet(hw int64) Result { return Result{HighWatermark: hw, LogStartOffset: 0} }

// open runs a full fetch with epoch 0 and returns the new session's id.
func open(t *testing.T, c *Cache, now time.Time, parts ...Partition) int32 {
	t.Helper()
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: parts}, now)
	if x.Err() != 0 {
		t.Fatalf("full fetch: error %d", x.Err())
	}
	res := make([]Result, len(x.Partitions()))
	for i := range res {
		res[i] = quiet(0)
	}
	keep, id, code := x.Finish(res, now)
	if code != 0 || id == 0 {
		t.Fatalf("full fetch: session %d, code %d", id, code)
	}
	for i, k := range keep {
		if !k {
			t.Fatalf("full fetch dropped partition %d", i)
		}
	}
	return id
}

func keys(parts []Partition) []Key {
	out := make([]Key, len(parts))
	for i, p := range parts {
		out[i] = p.Key
	}
	return out
}

func TestSessionKinds(t *testing.T) {
	c := New(Config{})
	a0, a1 := part("a", 0, 0), part("a", 1, 0)
	cases := []struct {
		name     string
		req      Request
		wantErr  int16
		wantSess bool
	}{
		{"v6 has no sessions", Request{Version: 6, SessionID: 0, Epoch: 0, Partitions: []Partition{a0}}, 0, false},
		{"sessionless full fetch (kafka-go: -1/-1)", Request{Version: 11, SessionID: -1, Epoch: -1, Partitions: []Partition{a0}}, 0, false},
		{"sessionless full fetch (0/-1)", Request{Version: 11, SessionID: 0, Epoch: -1, Partitions: []Partition{a0}}, 0, false},
		{"epoch 0 opens a session", Request{Version: 11, SessionID: 0, Epoch: 0, Partitions: []Partition{a0, a1}}, 0, true},
		{"epoch 0 with an unknown id still opens one", Request{Version: 11, SessionID: 12345, Epoch: 0, Partitions: []Partition{a0}}, 0, true},
		{"incremental with no session", Request{Version: 11, SessionID: 0, Epoch: 1}, kerr.FetchSessionIDNotFound.Code, false},
		{"incremental with an unknown session", Request{Version: 11, SessionID: 777, Epoch: 1}, kerr.FetchSessionIDNotFound.Code, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := c.NewContext(tc.req, t0)
			if x.Err() != tc.wantErr {
				t.Fatalf("Err = %d, want %d", x.Err(), tc.wantErr)
			}
			res := make([]Result, len(x.Partitions()))
			keep, id, code := x.Finish(res, t0)
			if code != tc.wantErr {
				t.Fatalf("Finish code = %d, want %d", code, tc.wantErr)
			}
			if (id != 0) != tc.wantSess {
				t.Fatalf("session id %d, want a session: %v", id, tc.wantSess)
			}
			if tc.wantErr == 0 {
				for i, k := range keep {
					if !k {
						t.Fatalf("a full fetch must answer every partition; dropped %d", i)
					}
				}
			}
		})
	}
}

func TestIncrementalEpochsAndNews(t *testing.T) {
	c := New(Config{})
	a0, a1, b0 := part("a", 0, 5), part("a", 1, 7), part("b", 0, 0)
	id := open(t, c, t0, a0, a1, b0)

	// Epoch 1: nothing named, nothing new: every partition is read (with
	// its remembered offset), none answered.
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, t0)
	if got := x.Partitions(); len(got) != 3 || got[0].FetchOffset != 5 || got[1].FetchOffset != 7 {
		t.Fatalf("partitions read = %+v", got)
	}
	keep, sid, code := x.Finish([]Result{quiet(0), quiet(0), quiet(0)}, t0)
	if code != 0 || sid != id || keep[0] || keep[1] || keep[2] {
		t.Fatalf("quiet incremental: keep %v sid %d code %d", keep, sid, code)
	}

	// A replayed epoch is refused.
	if x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, t0); x.Err() != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch: Err = %d", x.Err())
	}
	// So is a version that switches to topic IDs.
	if x := c.NewContext(Request{Version: 13, SessionID: id, Epoch: 2}, t0); x.Err() != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("topic-ID switch: Err = %d", x.Err())
	}

	// Epoch 2: a1 moved on, b0 has records, a0's high watermark grew.
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2, Partitions: []Partition{part("a", 1, 9)}}, t0)
	if got := x.Partitions(); got[1].FetchOffset != 9 {
		t.Fatalf("updated offset not used: %+v", got)
	}
	keep, _, code = x.Finish([]Result{quiet(6), quiet(0), {HighWatermark: 3, RecordBytes: 100}}, t0)
	if code != 0 || !keep[0] || keep[1] || !keep[2] {
		t.Fatalf("news: keep %v code %d", keep, code)
	}
	// a0 (first in the read order) returns records and moves to the back.
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 3, Partitions: []Partition{part("b", 0, 3)}}, t0)
	keep, _, _ = x.Finish([]Result{{HighWatermark: 8, RecordBytes: 10}, quiet(0), quiet(3)}, t0)
	if !keep[0] || keep[1] || keep[2] {
		t.Fatalf("keep %v", keep)
	}
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 4}, t0)
	if got := keys(x.Partitions()); got[0] != a1.Key || got[1] != b0.Key || got[2] != a0.Key {
		t.Fatalf("after a0 returned records the order is %v, want a1 b0 a0", got)
	}
	// An error is always answered, even with an unchanged high watermark
	// (an out-of-range read reports one), and the partition is answered
	// again the next time it is fine: its high watermark was forgotten.
	keep, _, _ = x.Finish([]Result{quiet(0), quiet(3), {HighWatermark: 8, ErrorCode: 1}}, t0)
	if keep[0] || keep[1] || !keep[2] {
		t.Fatalf("error not answered: %v", keep)
	}
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 5}, t0)
	keep, _, _ = x.Finish([]Result{quiet(0), quiet(3), quiet(8)}, t0)
	if keep[0] || keep[1] || !keep[2] {
		t.Fatalf("partition back from an error not answered: %v", keep)
	}
}

func TestForgottenAndEmptySession(t *testing.T) {
	c := New(Config{})
	a0, a1 := part("a", 0, 0), part("a", 1, 0)
	id := open(t, c, t0, a0, a1)
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1, Forgotten: []Key{a0.Key, {Topic: "zz", Partition: 9}}}, t0)
	if got := keys(x.Partitions()); len(got) != 1 || got[0] != a1.Key {
		t.Fatalf("after forgetting a-0: %v", got)
	}
	x.Finish([]Result{quiet(0)}, t0)
	if s := c.Stats(); s.Sessions != 1 || s.Partitions != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Forgetting the last partition ends the session.
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2, Forgotten: []Key{a1.Key}}, t0)
	if _, sid, code := x.Finish(nil, t0); sid != 0 || code != 0 {
		t.Fatalf("empty session: sid %d code %d", sid, code)
	}
	if s := c.Stats(); s.Sessions != 0 || s.Partitions != 0 {
		t.Fatalf("stats after the session ended %+v", s)
	}
	if x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 3}, t0); x.Err() != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("ended session still answers: %d", x.Err())
	}
}

func TestFullFetchClosesNamedSession(t *testing.T) {
	c := New(Config{})
	id := open(t, c, t0, part("a", 0, 0))
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: -1, Partitions: []Partition{part("a", 0, 0)}}, t0)
	if _, sid, _ := x.Finish([]Result{quiet(0)}, t0); sid != 0 {
		t.Fatalf("final epoch made a session %d", sid)
	}
	if c.Stats().Sessions != 0 {
		t.Fatal("final epoch did not close the session")
	}
}

func TestConcurrentEpochRace(t *testing.T) {
	c := New(Config{})
	id := open(t, c, t0, part("a", 0, 0))
	x1 := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, t0)
	// The client (wrongly) sends epoch 2 before epoch 1 is answered.
	x2 := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2}, t0)
	if x2.Err() != 0 {
		t.Fatalf("epoch 2: %d", x2.Err())
	}
	if _, sid, code := x1.Finish([]Result{quiet(1)}, t0); code != kerr.InvalidFetchSessionEpoch.Code || sid != id {
		t.Fatalf("stale context answered: sid %d code %d", sid, code)
	}
}

func TestEviction(t *testing.T) {
	c := New(Config{Slots: 2, EvictAfter: time.Minute})
	small := open(t, c, t0, part("a", 0, 0))
	big := open(t, c, t0, part("a", 0, 0), part("a", 1, 0), part("a", 2, 0))

	// Full, and both sessions are young: no room for anyone.
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("b", 0, 0), part("b", 1, 0)}}, t0.Add(time.Second))
	if _, sid, _ := x.Finish([]Result{quiet(0), quiet(0)}, t0.Add(time.Second)); sid != 0 {
		t.Fatal("a young session was evicted")
	}

	// Once they are older than EvictAfter, a larger new session evicts
	// the smallest; an equal or smaller one does not.
	later := t0.Add(90 * time.Second)
	// Keep both recently used so that neither is stale.
	for i, id := range []int32{small, big} {
		c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, later).Finish(make([]Result, []int{1, 3}[i]), later)
	}
	x = c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("c", 0, 0)}}, later)
	if _, sid, _ := x.Finish([]Result{quiet(0)}, later); sid != 0 {
		t.Fatal("a session no larger than the smallest evicted it")
	}
	x = c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("b", 0, 0), part("b", 1, 0)}}, later)
	nid, _ := finishQuiet(x, later)
	if nid == 0 {
		t.Fatal("a larger session could not evict the smallest old one")
	}
	if x := c.NewContext(Request{Version: 12, SessionID: small, Epoch: 2}, later); x.Err() != kerr.FetchSessionIDNotFound.Code {
		t.Fatal("the smallest session survived")
	}
	// A session idle longer than EvictAfter goes first, whatever its size.
	stale := later.Add(2 * time.Minute)
	c.NewContext(Request{Version: 12, SessionID: nid, Epoch: 1}, stale.Add(-time.Second)).Finish(make([]Result, 2), stale)
	x = c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("d", 0, 0)}}, stale)
	if id, _ := finishQuiet(x, stale); id == 0 {
		t.Fatal("a stale session was not evicted")
	}
	if x := c.NewContext(Request{Version: 12, SessionID: big, Epoch: 2}, stale); x.Err() != kerr.FetchSessionIDNotFound.Code {
		t.Fatal("the stale (least recently used) session survived")
	}
	if s := c.Stats(); s.Evictions != 2 || s.Sessions != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func finishQuiet(x *Context, now time.Time) (int32, int16) {
	_, id, code := x.Finish(make([]Result, len(x.Partitions())), now)
	return id, code
}

func TestSlotsZeroDisablesSessions(t *testing.T) {
	c := New(Config{Slots: -1})
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("a", 0, 0)}}, t0)
	if id, _ := finishQuiet(x, t0); id != 0 {
		t.Fatalf("session %d with sessions disabled", id)
	}
}

func TestBounds(t *testing.T) {
	// partitionCost of a partition of topic "a" or "b" is 201 bytes: the
	// cache holds three.
	c := New(Config{MaxSessionPartitions: 2, MaxCachedBytes: 3 * 201})
	// A fetch larger than a session may be is served without one.
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("a", 0, 0), part("a", 1, 0), part("a", 2, 0)}}, t0)
	if id, _ := finishQuiet(x, t0); id != 0 {
		t.Fatal("oversized session created")
	}
	id := open(t, c, t0, part("a", 0, 0))
	// Growing it past the bound ends it.
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1, Partitions: []Partition{part("a", 1, 0), part("a", 2, 0)}}, t0)
	if x.Err() != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("oversized incremental: %d", x.Err())
	}
	if s := c.Stats(); s.Sessions != 0 || s.Partitions != 0 || s.Bytes != 0 {
		t.Fatalf("stats %+v", s)
	}
	open(t, c, t0, part("a", 0, 0), part("a", 1, 0))
	// The cache-wide bound: 2 cached, a new session of 2 would make 4 > 3,
	// and the other session is young.
	x = c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("b", 0, 0), part("b", 1, 0)}}, t0)
	if id, _ := finishQuiet(x, t0); id != 0 {
		t.Fatal("cache-wide bound ignored")
	}
}

func TestNextEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{{0, 1}, {1, 2}, {-1, -1}, {1<<31 - 1, 1}} {
		if got := nextEpoch(tc.in); got != tc.want {
			t.Errorf("nextEpoch(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestEvictAtMostOne: as in Kafka, making room for one new session evicts
// at most one other; if that is not enough, the fetch goes without one.
func TestEvictAtMostOne(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, MaxCachedBytes: 4 * 201})
	for i := range 4 {
		open(t, c, t0, part("a", int32(i), 0))
	}
	later := t0.Add(2 * time.Minute)
	for _, id := range c.ids() {
		c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, later).Finish(make([]Result, 1), later)
	}
	// Three partitions need two evictions: none is made beyond the first.
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("b", 0, 0), part("b", 1, 0), part("b", 2, 0)}}, later)
	if id, _ := finishQuiet(x, later); id != 0 {
		t.Fatal("a session that needs two evictions was created")
	}
	if s := c.Stats(); s.Evictions != 1 || s.Sessions != 3 {
		t.Fatalf("stats %+v, want one eviction", s)
	}
}

// TestDuplicatePartitions: a full fetch naming a partition twice is read
// and answered once, with the last parameters, as in Kafka.
func TestDuplicatePartitions(t *testing.T) {
	c := New(Config{})
	x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("a", 0, 1), part("a", 1, 0), part("a", 0, 7)}}, t0)
	got := x.Partitions()
	if len(got) != 2 || got[0].Key != part("a", 0, 0).Key || got[0].FetchOffset != 7 {
		t.Fatalf("deduped partitions %+v", got)
	}
}

func (c *Cache) ids() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int32
	for id := range c.sessions {
		out = append(out, id)
	}
	return out
}

// TestConcurrent runs fetches in several sessions, and duplicates in one,
// at once; under -race it checks the locking.
func TestConcurrent(t *testing.T) {
	c := New(Config{Slots: 4})
	var ids []int32
	for i := range 3 {
		ids = append(ids, open(t, c, t0, part("a", int32(i), 0), part("b", int32(i), 0)))
	}
	done := make(chan struct{})
	for g := range 6 {
		go func() {
			defer func() { done <- struct{}{} }()
			id := ids[g%len(ids)]
			for e := int32(1); e < 200; e++ {
				x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: e, Partitions: []Partition{part("c", e%5, int64(e))}, Forgotten: []Key{{Topic: "c", Partition: (e + 2) % 5}}}, t0)
				x.Finish(make([]Result, len(x.Partitions())), t0)
				if g == 5 {
					x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: []Partition{part("d", e%3, 0)}}, t0)
					x.Finish(make([]Result, len(x.Partitions())), t0)
					c.Stats()
				}
			}
		}()
	}
	for range 6 {
		<-done
	}
}
