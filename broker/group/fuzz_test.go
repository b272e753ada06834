package group

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FuzzGroup drives one group with random JoinGroup (dynamic and static,
// old and new versions), SyncGroup, Heartbeat, LeaveGroup, commit checks,
// clock jumps and leadership changes, and checks after every step that:
//   - the group's own bookkeeping is consistent (checkGroup);
//   - there is one generation at a time: generations never go back, and
//     every successful JoinGroup answer of a generation names the same
//     protocol and the same leader;
//   - every successful SyncGroup answer is exactly what the leader's
//     accepted plan of that generation gave the member (or nothing if the
//     plan left it out), and no member gets an assignment in a generation
//     whose plan was never accepted;
//   - every request is answered once, and none is left waiting once
//     leadership is lost.
//
// With data[0]&0x40 the coordinator writes membership records to a store
// whose writes complete, fail or wait as the input says, and a leadership
// change activates a new incarnation from the records: then no generation
// a member committed offsets in may be restored below, and the
// generations that were durable keep their protocol, leader and plans.
func FuzzGroup(f *testing.F) {
	f.Add([]byte{0, 0, 9, 1, 0, 0, 3, 0, 0, 1, 6, 40, 4, 0, 0, 5, 0, 0})
	f.Add([]byte{2, 0, 2, 1, 9, 3, 0, 0, 3, 1, 0, 6, 200, 6, 200, 2, 1, 10, 3, 1, 0, 4, 0, 0})
	f.Add([]byte{0, 0, 9, 0, 1, 9, 0, 2, 9, 1, 0, 1, 1, 1, 1, 1, 2, 1, 3, 0, 0, 3, 1, 0, 3, 2, 0, 6, 100, 7, 3, 6, 50})
	f.Add([]byte{8, 0, 0, 1, 0, 0, 3, 0, 0, 6, 8, 0, 3, 1, 1, 2, 4, 0, 5, 1, 1, 6, 255, 6, 255, 7, 0})
	f.Add([]byte{0x40, 0, 9, 1, 0, 0, 3, 0, 0, 6, 1, 0, 7, 0, 0, 0, 1, 9, 1, 0, 0, 7, 255, 255, 4, 0, 0, 6, 1, 0, 7, 0, 0})
	f.Add([]byte{0x41, 0, 9, 0, 1, 9, 1, 0, 0, 1, 1, 0, 3, 0, 0, 3, 1, 0, 6, 1, 1, 6, 1, 0, 7, 1, 0, 7, 255, 255, 0, 2, 9, 6, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newFuzzModel(t, len(data) > 0 && data[0]&0x80 != 0, len(data) > 0 && data[0]&0x40 != 0)
		for i := 0; len(data) > 0 && i < 400; i++ {
			data = m.step(data)
			m.drain()
			m.checkGroup()
		}
		m.loseLeadership()
		if n := doubleAnswers.Load(); n != 0 {
			t.Fatalf("%d requests were answered twice", n)
		}
	})
}

var fuzzTrace = os.Getenv("FUZZ_TRACE") == "1"

type fuzzJoin struct {
	ch       <-chan JoinResult
	instance *string
	sentID   string
}

type fuzzSync struct {
	ch     <-chan SyncResult
	id     string
	gen    int32
	key    string
	expect map[string][]byte // non-nil: a leader's plan the coordinator should accept
}

type genInfo struct {
	protocol, leaderKey string
}

type fuzzModel struct {
	t   *testing.T
	c   *Coordinator
	clk *fakeClock

	ids     []string          // every member id seen (stale ones included)
	idKey   map[string]string // id -> "inst:<instance>" for static members
	lastGen map[string]int32  // id -> generation of its last successful join
	leaders map[string]bool   // ids told they lead their last generation

	joins []fuzzJoin
	syncs []fuzzSync

	gens     map[int32]genInfo
	plans    map[int32]map[string][]byte // generation -> member key -> assignment
	lastGen0 int32

	// With records (persist): the store, the writes waiting on it, and
	// the newest generation a commit was accepted in.
	persist   bool
	records   map[string][]byte
	writes    []func(fail bool)
	committed int32
}

func newFuzzModel(t *testing.T, delay, persist bool) *fuzzModel {
	m := &fuzzModel{t: t, persist: persist, records: map[string][]byte{}}
	m.c, m.clk = newTestCoordinator(t, func(cfg *Config) {
		if delay {
			cfg.InitialRebalanceDelay = 3 * time.Second
		}
		if persist {
			cfg.Persist = m.persistRecord
		}
	})
	m.reset()
	return m
}

func (m *fuzzModel) reset() {
	m.idKey = map[string]string{}
	m.lastGen = map[string]int32{}
	m.leaders = map[string]bool{}
	m.gens = map[int32]genInfo{}
	m.plans = map[int32]map[string][]byte{}
	m.lastGen0 = 0
	m.ids = nil
}

func (m *fuzzModel) key(id string) string {
	if k, ok := m.idKey[id]; ok {
		return k
	}
	return id
}

var fuzzInstances = []string{"i0", "i1", "i2"}

func fuzzProtocols(b byte) []Protocol {
	switch b % 4 {
	case 0:
		return []Protocol{{Name: "range", Metadata: consumerMeta("t")}}
	case 1:
		return []Protocol{{Name: "cooperative-sticky", Metadata: consumerMeta("t")}, {Name: "range", Metadata: consumerMeta("t")}}
	case 2:
		return []Protocol{{Name: "range", Metadata: consumerMeta("t", "u")}}
	default:
		return []Protocol{{Name: "sticky", Metadata: consumerMeta("t")}}
	}
}

// take returns the next byte (0 once data runs out) and the rest.
func take(data []byte) (byte, []byte) {
	if len(data) == 0 {
		return 0, nil
	}
	return data[0], data[1:]
}

func (m *fuzzModel) pickID(b byte) string {
	if len(m.ids) == 0 || b == 255 {
		return "unknown-member"
	}
	return m.ids[int(b)%len(m.ids)]
}

func (m *fuzzModel) group() *group { return m.c.groups["g"] }

func (m *fuzzModel) step(data []byte) []byte {
	op, data := take(data)
	a, data := take(data)
	b, data := take(data)
	if fuzzTrace {
		m.t.Logf("op %d (%d) a %d b %d; group %v", op%8, op, a, b, m.genOf())
	}
	switch op % 8 {
	case 0, 1, 2: // JoinGroup
		req := joinReq("g", "")
		req.Protocols = fuzzProtocols(a >> 4)
		req.SessionTimeout = []time.Duration{6 * time.Second, 10 * time.Second, 30 * time.Second, time.Second}[b%4]
		req.RebalanceTimeout = []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second, 0}[(b>>2)%4]
		req.RequireKnownMemberID = op&8 == 0
		req.SupportSkipAssignment = op&16 != 0
		switch op % 8 {
		case 1:
			req.MemberID = m.pickID(a)
		case 2:
			inst := fuzzInstances[int(a)%len(fuzzInstances)]
			req.InstanceID = &inst
			req.RequireKnownMemberID = false
			if op&32 != 0 {
				req.MemberID = m.pickID(b)
			}
		}
		m.joins = append(m.joins, fuzzJoin{ch: m.c.Join(req), instance: req.InstanceID, sentID: req.MemberID})
	case 3: // SyncGroup
		id := m.pickID(a)
		gen := m.lastGen[id] + int32(b%3) - 1
		if b&0x80 != 0 {
			gen = m.lastGen[id]
		}
		req := SyncRequest{Group: "g", Generation: gen, MemberID: id}
		s := fuzzSync{id: id, gen: gen, key: m.key(id)}
		if m.leaders[id] || op&8 != 0 {
			// A plan for some members, maybe with duplicates and strangers.
			for i := 0; i < 1+int(b%4); i++ {
				req.Assignments = append(req.Assignments, Assignment{MemberID: m.pickID(b + byte(i)*7), Assignment: []byte(fmt.Sprintf("g%d-%d-%d", gen, i, a))})
			}
			// While the record of an earlier plan of the generation is
			// being written, that plan is the one the group takes.
			if g := m.group(); g != nil && g.state == CompletingRebalance && g.leader == id && g.generation == gen && !g.storing {
				s.expect = map[string][]byte{}
				parts := map[string][]byte{}
				for _, as := range req.Assignments {
					parts[as.MemberID] = as.Assignment
				}
				for mid := range g.members {
					s.expect[m.key(mid)] = parts[mid]
				}
			}
		}
		s.ch = m.c.Sync(req)
		if g := m.group(); s.expect != nil && g != nil && g.storing {
			// Written ahead: the plan is the generation's from now on,
			// whatever this request's own answer (a retry replaces it).
			if _, dup := m.plans[s.gen]; dup {
				m.t.Fatalf("a second plan accepted for generation %d", s.gen)
			}
			m.plans[s.gen] = s.expect
			s.expect = nil
		}
		m.syncs = append(m.syncs, s)
	case 4: // Heartbeat
		id := m.pickID(a)
		gen := m.lastGen[id]
		if b&1 != 0 {
			gen += int32(b%5) - 2
		}
		err := m.c.Heartbeat(HeartbeatRequest{Group: "g", Generation: gen, MemberID: id})
		if err == nil {
			if g := m.group(); g == nil || gen != g.generation {
				m.t.Fatalf("heartbeat of %s at generation %d succeeded; group at %v", id, gen, m.genOf())
			}
		}
	case 5: // LeaveGroup
		var lm []LeavingMember
		lm = append(lm, LeavingMember{MemberID: m.pickID(a)})
		if b&1 != 0 {
			inst := fuzzInstances[int(b>>1)%len(fuzzInstances)]
			lm = append(lm, LeavingMember{InstanceID: &inst})
		}
		m.c.Leave("g", lm)
	case 6: // time passes; with records, writes complete or fail first
		switch b % 3 {
		case 0:
			m.completeWrites(false)
		case 1:
			m.completeWrites(true)
		}
		m.clk.Advance(time.Duration(a) * 250 * time.Millisecond)
		m.c.Tick()
	case 7: // reads, and now and then a leadership change
		id := m.pickID(a)
		if m.c.ValidateCommit("g", m.lastGen[id], id, nil, func() bool { return b&1 != 0 }) == nil && m.lastGen[id] > m.committed {
			m.committed = m.lastGen[id]
		}
		m.c.Describe("g", b&2 != 0)
		m.c.List([]string{"g", "other"}, nil)
		if sub, err := m.c.OffsetDeleteCheck("g", true); err == nil {
			sub("t")
		}
		if a == 0xff && b == 0xff {
			if m.persist {
				m.takeOver()
				break
			}
			m.loseLeadership()
			m.c.Activate(nil)
		}
	}
	return data
}

func (m *fuzzModel) genOf() any {
	if g := m.group(); g != nil {
		return fmt.Sprintf("%d (%v)", g.generation, g.state)
	}
	return "none"
}

func (m *fuzzModel) addID(id string) {
	for _, x := range m.ids {
		if x == id {
			return
		}
	}
	m.ids = append(m.ids, id)
}

// drain collects every answer that has arrived and checks it.
func (m *fuzzModel) drain() {
	var joins []fuzzJoin
	type joined struct {
		j fuzzJoin
		r JoinResult
	}
	var got []joined
	for _, j := range m.joins {
		r, ok := now(j.ch)
		if !ok {
			joins = append(joins, j)
			continue
		}
		got = append(got, joined{j, r})
		if r.Err == nil && j.instance != nil && j.sentID == "" {
			// Ids made for an instance belong to it. (A dynamic member
			// that sends an instance id stays dynamic, as in Kafka.)
			m.idKey[r.MemberID] = "inst:" + *j.instance
		}
	}
	m.joins = joins
	for _, x := range got {
		m.checkJoin(x.j, x.r)
	}

	// Leader plans first: followers are answered in the same step.
	var rest []fuzzSync
	type answered struct {
		s fuzzSync
		r SyncResult
	}
	var done []answered
	for _, s := range m.syncs {
		r, ok := now(s.ch)
		if !ok {
			rest = append(rest, s)
			continue
		}
		done = append(done, answered{s, r})
		if r.Err == nil && s.expect != nil {
			if _, dup := m.plans[s.gen]; dup {
				m.t.Fatalf("a second plan accepted for generation %d", s.gen)
			}
			m.plans[s.gen] = s.expect
		}
	}
	m.syncs = rest
	for _, d := range done {
		if d.r.Err != nil {
			continue
		}
		plan, ok := m.plans[d.s.gen]
		if !ok {
			m.t.Fatalf("member %s got assignment %q in generation %d, whose leader's plan was never accepted", d.s.id, d.r.Assignment, d.s.gen)
		}
		if want := plan[d.s.key]; !bytes.Equal(want, d.r.Assignment) {
			m.t.Fatalf("member %s (key %s) got %q in generation %d; the leader's plan gave it %q", d.s.id, d.s.key, d.r.Assignment, d.s.gen, want)
		}
		if g := m.group(); g == nil || g.generation < d.s.gen {
			m.t.Fatalf("sync answer for generation %d beyond the group's %v", d.s.gen, m.genOf())
		}
	}
}

func (m *fuzzModel) checkJoin(j fuzzJoin, r JoinResult) {
	if fuzzTrace {
		m.t.Logf("join sent %q inst %v -> %+v", j.sentID, j.instance, r)
	}
	if r.MemberID != "" {
		m.addID(r.MemberID)
	}
	if r.Err != nil {
		if r.Generation != -1 {
			m.t.Fatalf("join error %v with generation %d", r.Err, r.Generation)
		}
		if r.Err == kerr.MemberIDRequired && (j.instance != nil || j.sentID != "") {
			m.t.Fatalf("MEMBER_ID_REQUIRED for a static or known member")
		}
		return
	}
	g := m.group()
	if g == nil || r.Generation < 1 || r.Generation > g.generation {
		m.t.Fatalf("join answer for generation %d; group at %v", r.Generation, m.genOf())
	}
	if r.Protocol == nil || *r.Protocol == "" || r.ProtocolType == nil || *r.ProtocolType != "consumer" {
		m.t.Fatalf("join answer without a protocol: %+v", r)
	}
	info := genInfo{protocol: *r.Protocol, leaderKey: m.key(r.LeaderID)}
	if prev, ok := m.gens[r.Generation]; ok && prev != info {
		m.t.Fatalf("generation %d answered with protocol/leader %+v, earlier %+v", r.Generation, info, prev)
	}
	m.gens[r.Generation] = info
	if r.Generation < m.lastGen[r.MemberID] {
		m.t.Fatalf("member %s went back from generation %d to %d", r.MemberID, m.lastGen[r.MemberID], r.Generation)
	}
	m.lastGen[r.MemberID] = r.Generation
	m.leaders[r.MemberID] = r.LeaderID == r.MemberID
	if len(r.Members) > 0 {
		if r.LeaderID != r.MemberID {
			m.t.Fatalf("member %s got the member list but %s leads", r.MemberID, r.LeaderID)
		}
		seen := map[string]bool{}
		for _, mm := range r.Members {
			if seen[mm.MemberID] {
				m.t.Fatalf("member %s listed twice", mm.MemberID)
			}
			seen[mm.MemberID] = true
		}
	}
}

// checkGroup checks the group's bookkeeping.
func (m *fuzzModel) checkGroup() {
	g := m.group()
	if g == nil {
		return
	}
	fail := func(format string, args ...any) {
		m.t.Helper()
		m.t.Fatalf("group %v: "+format, append([]any{m.genOf()}, args...)...)
	}
	if g.generation < m.lastGen0 {
		fail("generation went back from %d", m.lastGen0)
	}
	m.lastGen0 = g.generation
	switch g.state {
	case Empty:
		if len(g.members) > 0 {
			fail("empty with %d members", len(g.members))
		}
	case CompletingRebalance, Stable:
		if g.generation < 1 || g.protocol == "" {
			fail("settled without a generation or protocol (%q)", g.protocol)
		}
		if len(g.members) == 0 {
			fail("settled without members")
		}
		for id, mm := range g.members {
			if !mm.supports(g.protocol) {
				fail("member %s does not support protocol %s", id, g.protocol)
			}
		}
	case Dead:
		fail("a dead group is still in the map")
	}
	if len(g.members) > 0 && g.members[g.leader] == nil {
		fail("leader %q is not a member", g.leader)
	}
	if len(g.members) == 0 && g.leader != "" {
		fail("leader %q without members", g.leader)
	}
	for inst, id := range g.static {
		if mm := g.members[id]; mm == nil || mm.instanceID == nil || *mm.instanceID != inst {
			fail("static map %s -> %s is stale", inst, id)
		}
	}
	for id, mm := range g.members {
		if mm.id != id {
			fail("member %s filed under %s", mm.id, id)
		}
		if mm.instanceID != nil && g.static[*mm.instanceID] != id {
			fail("static member %s missing from the static map", id)
		}
		// (A restarted static member of a Stable group waits for the
		// record with its new id.)
		if mm.awaitingJoin() && g.state != PreparingRebalance && !(g.state == Stable && mm.instanceID != nil) {
			fail("member %s awaits a join in state %v", id, g.state)
		}
		if mm.awaitingSync() && g.state != CompletingRebalance {
			fail("member %s awaits a sync in state %v", id, g.state)
		}
		if _, p := g.pending[id]; p {
			fail("member %s is also pending", id)
		}
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			fail("pending sync of non-member %s", id)
		}
		if g.state != CompletingRebalance && g.state != Stable {
			fail("pending syncs in state %v", g.state)
		}
	}
}

// loseLeadership drops the coordinator's state and checks that every
// waiting request got its answer.
func (m *fuzzModel) loseLeadership() {
	m.c.Deactivate()
	m.drain()
	if len(m.joins) > 0 || len(m.syncs) > 0 {
		m.t.Fatalf("%d joins and %d syncs still wait after leadership was lost", len(m.joins), len(m.syncs))
	}
	m.reset()
}

// persistRecord is the coordinator's Persist: the write waits until the
// input completes it.
func (m *fuzzModel) persistRecord(group string, data []byte, done func(*kerr.Error)) {
	m.writes = append(m.writes, func(fail bool) {
		if fail {
			done(kerr.NotCoordinator)
			return
		}
		if data == nil {
			delete(m.records, group)
		} else {
			m.records[group] = data
		}
		done(nil)
	})
}

// completeWrites completes (or fails) every waiting write, in order.
func (m *fuzzModel) completeWrites(fail bool) {
	for len(m.writes) > 0 {
		w := m.writes[0]
		m.writes = m.writes[1:]
		w(fail)
	}
}

// takeOver is a leadership change with records: writes still waiting
// never land (raft refuses them in a later term), the old incarnation
// answers its waiters, and a new one starts from the records.
func (m *fuzzModel) takeOver() {
	m.writes = nil
	m.c.Deactivate()
	m.drain()
	if len(m.joins) > 0 || len(m.syncs) > 0 {
		m.t.Fatalf("%d joins and %d syncs still wait after leadership was lost", len(m.joins), len(m.syncs))
	}
	m.c.Activate(m.records)
	restored := int32(0)
	if g := m.group(); g != nil {
		restored = g.generation
	}
	if restored < m.committed {
		m.t.Fatalf("a commit was accepted in generation %d, but the records restore generation %d", m.committed, restored)
	}
	// Generations past the restored one were never durable: they may be
	// handed out again, differently.
	for gen := range m.gens {
		if gen > restored {
			delete(m.gens, gen)
			delete(m.plans, gen)
		}
	}
	m.lastGen0 = restored
}
