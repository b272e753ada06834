package group

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recordStore is a Persist that keeps the records in a map. Writes wait
// until release is called (held), or complete at once on their own
// goroutine; fail makes the next writes fail with that error.
type recordStore struct {
	mu      sync.Mutex
	records map[string][]byte
	held    bool
	waiting []func()
	fail    *kerr.Error
	wg      sync.WaitGroup
}

func (s *recordStore) persist(group string, data []byte, done func(*kerr.Error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := s.fail
	write := func() {
		defer s.wg.Done()
		s.mu.Lock()
		if fail == nil {
			if data == nil {
				delete(s.records, group)
			} else {
				s.records[group] = data
			}
		}
		s.mu.Unlock()
		done(fail)
	}
	s.wg.Add(1)
	if s.held {
		s.waiting = append(s.waiting, write)
		return
	}
	go write()
}

// release completes the held writes, in order, and waits for them.
func (s *recordStore) release() {
	s.mu.Lock()
	w := s.waiting
	s.waiting, s.held = nil, false
	s.mu.Unlock()
	for _, f := range w {
		f()
	}
	s.wg.Wait()
}

func (s *recordStore) snapshot() map[string][]byte {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.records {
		out[k] = v
	}
	return out
}

// A coordinator that takes over from the records carries the group on:
// same generation, members and assignments, no rebalance, and commits of
// the generation are accepted.
func TestRecordsCarryGroupsAcrossCoordinators(t *testing.T) {
	st := &recordStore{records: map[string][]byte{}}
	persist := func(c *Config) { c.Persist = st.persist }
	c1, _ := newTestCoordinator(t, persist)
	a, chA := joinNew(t, c1, joinReq("g", ""))
	mustNow(t, chA, "a joins")
	st.held = true
	chSync := c1.Sync(SyncRequest{Group: "g", Generation: 1, MemberID: a, Assignments: []Assignment{{MemberID: a, Assignment: []byte("p0")}}})
	mustWait(t, chSync, "the leader's sync before its record is durable")
	wantErr(t, "a commit before the record is durable", c1.ValidateCommit("g", 1, a, nil, noOffsets), kerr.RebalanceInProgress)
	st.release()
	if r := <-chSync; r.Err != nil || string(r.Assignment) != "p0" {
		t.Fatalf("sync once durable: %+v", r)
	}
	b, chB := joinNew(t, c1, joinReq("g", ""))
	mustWait(t, chB, "b waits")
	chA = c1.Join(joinReq("g", a))
	mustNow(t, chA, "a rejoins")
	mustNow(t, chB, "b joins")
	chSyncB := c1.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: b})
	chSyncA := c1.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: a, Assignments: []Assignment{{MemberID: a, Assignment: []byte("p0")}, {MemberID: b, Assignment: []byte("p1")}}})
	if r := <-chSyncB; r.Err != nil || string(r.Assignment) != "p1" {
		t.Fatalf("b's sync: %+v", r)
	}
	<-chSyncA
	c1.Deactivate()

	c2, clk := newTestCoordinator(t, persist)
	c2.Activate(st.snapshot())
	d, err := c2.Describe("g", false)
	if err != nil || d.State != "Stable" || len(d.Members) != 2 || d.Members[0].MemberID != a || string(d.Members[1].Assignment) != "p1" {
		t.Fatalf("taken over: %+v %v", d, err)
	}
	for _, id := range []string{a, b} {
		wantErr(t, "heartbeat of "+id, c2.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: id}), nil)
		wantErr(t, "commit of "+id, c2.ValidateCommit("g", 2, id, nil, withOffsets), nil)
	}
	wantErr(t, "commit of the old generation", c2.ValidateCommit("g", 1, a, nil, withOffsets), kerr.IllegalGeneration)
	// Sessions run from the take-over: a member that never comes back
	// is expelled, and the generation goes on from the record's.
	clk.Advance(5 * time.Second)
	wantErr(t, "a's heartbeat", c2.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), nil)
	clk.Advance(6 * time.Second)
	c2.Tick()
	ch := c2.Join(joinReq("g", a))
	if r := mustNow(t, ch, "a rejoins after b expired"); r.Err != nil || r.Generation != 3 {
		t.Fatalf("rejoin: %+v", r)
	}
	if r := <-c2.Sync(SyncRequest{Group: "g", Generation: 3, MemberID: a, Assignments: []Assignment{{MemberID: a, Assignment: []byte("p0,p1")}}}); r.Err != nil {
		t.Fatalf("sync: %+v", r)
	}
	leave, _ := c2.Leave("g", []LeavingMember{{MemberID: a}})
	wantErr(t, "leave", leave, nil)
	if d, _ := c2.Describe("g", false); d.State != "Empty" {
		t.Fatalf("after the last member left: %s", d.State)
	}
	c3, _ := newTestCoordinator(t, persist)
	c3.Activate(st.snapshot())
	if d, _ := c3.Describe("g", false); d.State != "Empty" {
		t.Fatalf("empty group taken over as %s", d.State)
	}
	wantErr(t, "delete", c3.Delete("g", false), nil)
	if recs := st.snapshot(); len(recs) != 0 {
		t.Fatalf("records after delete: %v", recs)
	}
}

// A record that cannot be written fails the rebalance: the waiting
// SyncGroups get the error and the group prepares another one.
func TestRecordWriteFailureFailsTheRebalance(t *testing.T) {
	st := &recordStore{records: map[string][]byte{}, fail: kerr.NotCoordinator}
	c, _ := newTestCoordinator(t, func(c *Config) { c.Persist = st.persist })
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a joins")
	r := <-c.Sync(SyncRequest{Group: "g", Generation: 1, MemberID: a, Assignments: []Assignment{{MemberID: a, Assignment: []byte("p0")}}})
	wantErr(t, "sync", r.Err, kerr.NotCoordinator)
	if d, _ := c.Describe("g", false); d.State != "PreparingRebalance" {
		t.Fatalf("state after the failed write: %s", d.State)
	}
}

// A rebalance cut short before its record was written leaves the group
// at a generation a new coordinator would not know: nobody may commit in
// it.
func TestNoCommitsInAGenerationNotDurable(t *testing.T) {
	st := &recordStore{records: map[string][]byte{}}
	c, _ := newTestCoordinator(t, func(c *Config) { c.Persist = st.persist })
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a joins")
	if r := <-c.Sync(SyncRequest{Group: "g", Generation: 1, MemberID: a, Assignments: []Assignment{{MemberID: a, Assignment: []byte("p0")}}}); r.Err != nil {
		t.Fatalf("sync: %+v", r)
	}
	wantErr(t, "commit in the durable generation", c.ValidateCommit("g", 1, a, nil, noOffsets), nil)
	// b joins; a rejoins; generation 2 completes its join, then b leaves
	// before the leader's SyncGroup: the group prepares another rebalance
	// at generation 2, whose record was never written.
	b, chB := joinNew(t, c, joinReq("g", ""))
	mustWait(t, chB, "b waits")
	mustNow(t, c.Join(joinReq("g", a)), "a rejoins")
	if r := mustNow(t, chB, "b joins"); r.Generation != 2 {
		t.Fatalf("generation %d", r.Generation)
	}
	leave, _ := c.Leave("g", []LeavingMember{{MemberID: b}})
	wantErr(t, "b leaves", leave, nil)
	if d, _ := c.Describe("g", false); d.State != "PreparingRebalance" {
		t.Fatalf("state %s", d.State)
	}
	wantErr(t, "commit in generation 2", c.ValidateCommit("g", 2, a, nil, noOffsets), kerr.RebalanceInProgress)
	if recs := st.snapshot(); !strings.Contains(string(recs["g"]), `"generation":1`) {
		t.Fatalf("record %s", recs["g"])
	}
}

// A static member that restarts takes a new member id only once the
// record with it is durable; if the write fails it is told so.
func TestStaticReplacementWaitsForItsRecord(t *testing.T) {
	st := &recordStore{records: map[string][]byte{}}
	c, _ := newTestCoordinator(t, func(c *Config) { c.Persist = st.persist })
	static := func(member string) JoinRequest {
		r := joinReq("g", member)
		id := "inst"
		r.InstanceID = &id
		return r
	}
	r := mustNow(t, c.Join(static("")), "static join")
	if sr := <-c.Sync(SyncRequest{Group: "g", Generation: r.Generation, MemberID: r.MemberID, Assignments: []Assignment{{MemberID: r.MemberID, Assignment: []byte("p0")}}}); sr.Err != nil {
		t.Fatalf("sync: %+v", sr)
	}
	st.mu.Lock()
	st.held = true
	st.mu.Unlock()
	ch := c.Join(static(""))
	mustWait(t, ch, "the restarted static member before its record is durable")
	st.release()
	if r := <-ch; r.Err != nil || r.Generation != 1 {
		t.Fatalf("rejoin once durable: %+v", r)
	}
	recs := st.snapshot()
	if !strings.Contains(string(recs["g"]), `"id":"inst-2"`) {
		t.Fatalf("record %s lacks the new member id", recs["g"])
	}
	st.mu.Lock()
	st.fail = kerr.NotCoordinator
	st.mu.Unlock()
	if r := <-c.Join(static("")); r.Err != kerr.NotCoordinator {
		t.Fatalf("rejoin whose record failed: %+v", r)
	}
}

// Records that do not describe a group are not trusted: one that does not
// decode is skipped, one that decodes gives an Empty group of its
// generation, so the generation still goes on from there.
func TestRestoreRefusesBadRecords(t *testing.T) {
	cfg := Config{}.withDefaults()
	for name, data := range map[string]string{
		"not json":     "{",
		"negative gen": `{"generation":-1}`,
	} {
		if g, err := restoreGroup(&cfg, "g", []byte(data), time.Now()); err == nil || g != nil {
			t.Errorf("%s: restored %v", name, g)
		}
	}
	for name, data := range map[string]string{
		"leader not member":  `{"generation":4,"protocol_type":"consumer","protocol":"range","leader":"x","members":[{"id":"a","session_timeout_ms":1000,"protocols":[{"name":"range"}]}]}`,
		"no protocol type":   `{"generation":4,"protocol":"range","leader":"a","members":[{"id":"a","session_timeout_ms":1000,"protocols":[{"name":"range"}]}]}`,
		"no session timeout": `{"generation":4,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","protocols":[{"name":"range"}]}]}`,
		"member twice":       `{"generation":4,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_timeout_ms":1000,"protocols":[{"name":"range"}]},{"id":"a","session_timeout_ms":1000,"protocols":[{"name":"range"}]}]}`,
		"instance twice":     `{"generation":4,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","instance_id":"i","session_timeout_ms":1000,"protocols":[{"name":"range"}]},{"id":"b","instance_id":"i","session_timeout_ms":1000,"protocols":[{"name":"range"}]}]}`,
		"protocol missing":   `{"generation":4,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","session_timeout_ms":1000,"protocols":[{"name":"roundrobin"}]}]}`,
	} {
		g, err := restoreGroup(&cfg, "g", []byte(data), time.Now())
		if err == nil || g == nil || g.state != Empty || g.generation != 4 || len(g.members) != 0 {
			t.Errorf("%s: %v, group %+v", name, err, g)
		}
	}
	// An empty protocol name is one a group can have.
	g, err := restoreGroup(&cfg, "g", []byte(`{"generation":2,"protocol_type":"x","protocol":"","leader":"a","members":[{"id":"a","session_timeout_ms":1000,"protocols":[{"name":""}]}]}`), time.Now())
	if err != nil || g.state != Stable {
		t.Errorf("empty protocol name: %v", err)
	}
}
