package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSingleMemberJoinSyncHeartbeat(t *testing.T) {
	c, _ := newTestCoordinator(t)
	id, ch := joinNew(t, c, joinReq("g", ""))
	r := mustNow(t, ch, "join with the assigned id")
	wantErr(t, "join", r.Err, nil)
	if r.Generation != 1 || r.LeaderID != id || r.MemberID != id || *r.Protocol != "range" || *r.ProtocolType != "consumer" {
		t.Fatalf("join result %+v, want generation 1 led by %s with range", r, id)
	}
	if len(r.Members) != 1 || r.Members[0].MemberID != id {
		t.Fatalf("leader's members %+v, want itself", r.Members)
	}
	wantErr(t, "heartbeat while completing", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: id}), nil)
	got := syncAll(t, c, "g", 1, id, nil, map[string]string{id: "all of it"})
	if got[id] != "all of it" {
		t.Fatalf("assignment %q", got[id])
	}
	wantErr(t, "heartbeat when stable", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: id}), nil)
	wantErr(t, "heartbeat old generation", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 0, MemberID: id}), kerr.IllegalGeneration)
	wantErr(t, "heartbeat unknown member", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: "nobody"}), kerr.UnknownMemberID)
	wantErr(t, "heartbeat unknown group", c.Heartbeat(HeartbeatRequest{Group: "other", Generation: 1, MemberID: id}), kerr.UnknownMemberID)
	d, err := c.Describe("g", false)
	if err != nil || d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 1 || string(d.Members[0].Assignment) != "all of it" {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

func TestSecondMemberTriggersRebalance(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a joins")
	syncAll(t, c, "g", 1, a, nil, map[string]string{a: "p0,p1"})

	b, chB := joinNew(t, c, joinReq("g", ""))
	mustWait(t, chB, "b waits for a to rejoin")
	wantErr(t, "a's heartbeat", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: a}), kerr.RebalanceInProgress)
	// a commits its offsets before rejoining: allowed while preparing.
	wantErr(t, "a commits", c.ValidateCommit("g", 1, a, nil, noOffsets), nil)
	wantErr(t, "b's sync before the join completes", mustNow(t, c.Sync(SyncRequest{Group: "g", Generation: 1, MemberID: b}), "sync").Err, kerr.RebalanceInProgress)
	wantErr(t, "b's sync for a future generation", mustNow(t, c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: b}), "sync").Err, kerr.IllegalGeneration)

	chA := c.Join(joinReq("g", a))
	ra, rb := mustNow(t, chA, "a rejoins"), mustNow(t, chB, "b")
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || rb.LeaderID != a {
		t.Fatalf("a %+v b %+v: want generation 2 led by a", ra, rb)
	}
	if len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("only the leader gets the members: a %d, b %d", len(ra.Members), len(rb.Members))
	}
	wantErr(t, "commit while completing", c.ValidateCommit("g", 2, a, nil, noOffsets), kerr.RebalanceInProgress)

	// b syncs first and waits for the leader.
	chSB := c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: b})
	mustWait(t, chSB, "b's sync waits for the leader")
	chSA := c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: a, Assignments: []Assignment{{a, []byte("p0")}, {b, []byte("p1")}, {"ghost", []byte("p9")}}})
	if sa, sb := mustNow(t, chSA, "a"), mustNow(t, chSB, "b"); string(sa.Assignment) != "p0" || string(sb.Assignment) != "p1" {
		t.Fatalf("assignments a=%q b=%q", sa.Assignment, sb.Assignment)
	}
	wantErr(t, "commit when stable", c.ValidateCommit("g", 2, b, nil, noOffsets), nil)
	wantErr(t, "commit old generation", c.ValidateCommit("g", 1, b, nil, noOffsets), kerr.IllegalGeneration)
	wantErr(t, "simple commit to a live group", c.ValidateCommit("g", -1, "", nil, noOffsets), kerr.UnknownMemberID)
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a")
	syncAll(t, c, "g", 1, a, nil, map[string]string{a: "x"})

	req := joinReq("g", "")
	req.RebalanceTimeout = 20 * time.Second
	_, chB := joinNew(t, c, req)
	// a keeps heartbeating but never rejoins.
	for i := 0; i < 5; i++ {
		clk.Advance(4 * time.Second)
		c.Tick()
		wantErr(t, "a heartbeats", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: a}), kerr.RebalanceInProgress)
	}
	mustWait(t, chB, "b before the rebalance timeout (30s, the longest of both)")
	clk.Advance(10 * time.Second)
	c.Tick()
	rb := mustNow(t, chB, "b after the rebalance timeout")
	if rb.Err != nil || rb.Generation != 2 || rb.LeaderID != rb.MemberID || len(rb.Members) != 1 {
		t.Fatalf("b: %+v, want to lead generation 2 alone", rb)
	}
	wantErr(t, "a's heartbeat after being dropped", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: a}), kerr.UnknownMemberID)
}

func TestSessionTimeoutExpelsMember(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, chA := joinNew(t, c, joinReq("g", ""))
	mustNow(t, chA, "a")
	b, chB := joinNew(t, c, joinReq("g", ""))
	mustWait(t, chB, "b")
	chA = c.Join(joinReq("g", a))
	mustNow(t, chA, "a")
	mustNow(t, chB, "b")
	syncAll(t, c, "g", 2, a, []string{b}, map[string]string{a: "p0", b: "p1"})

	// b dies; a heartbeats every 3s.
	for i := 0; i < 3; i++ {
		clk.Advance(3 * time.Second)
		c.Tick()
		wantErr(t, "a", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), nil)
	}
	clk.Advance(2 * time.Second) // 11s since b's last sign of life
	c.Tick()
	wantErr(t, "a after b's session expired", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), kerr.RebalanceInProgress)
	r := mustNow(t, c.Join(joinReq("g", a)), "a rejoins")
	if r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("a: %+v, want generation 3 alone", r)
	}
	syncAll(t, c, "g", 3, a, nil, map[string]string{a: "p0,p1"})
}

func TestPendingMemberIDExpires(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a")
	syncAll(t, c, "g", 1, a, nil, map[string]string{a: "x"})
	// A client that gets a member id and never comes back does not
	// trigger a rebalance.
	r := mustNow(t, c.Join(joinReq("g", "")), "join")
	wantErr(t, "first join", r.Err, kerr.MemberIDRequired)
	wantErr(t, "a still stable", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: a}), nil)
	clk.Advance(11 * time.Second)
	c.Tick()
	wantErr(t, "late join with the expired id", mustNow(t, c.Join(joinReq("g", r.MemberID)), "late").Err, kerr.UnknownMemberID)
}

func TestPendingSyncExpires(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, chA := joinNew(t, c, joinReq("g", ""))
	mustNow(t, chA, "a")
	b, chB := joinNew(t, c, joinReq("g", ""))
	chA = c.Join(joinReq("g", a))
	mustNow(t, chA, "a")
	mustNow(t, chB, "b")
	// The leader syncs; b never does (but heartbeats).
	mustNow(t, c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: a, Assignments: []Assignment{{a, []byte("p0")}, {b, []byte("p1")}}}), "a")
	for i := 0; i < 10; i++ {
		clk.Advance(3 * time.Second)
		c.Tick()
		c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: b})
		c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a})
	}
	wantErr(t, "b after the sync deadline", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: b}), kerr.UnknownMemberID)
	wantErr(t, "a after b was dropped", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), kerr.RebalanceInProgress)
}

func TestLeaveGroup(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, chA := joinNew(t, c, joinReq("g", ""))
	mustNow(t, chA, "a")
	b, chB := joinNew(t, c, joinReq("g", ""))
	chA = c.Join(joinReq("g", a))
	mustNow(t, chA, "a")
	mustNow(t, chB, "b")
	syncAll(t, c, "g", 2, a, []string{b}, map[string]string{a: "p0", b: "p1"})

	gerr, errs := c.Leave("g", []LeavingMember{{MemberID: a}, {MemberID: "nobody"}})
	if gerr != nil || errs[0] != nil || errs[1] != kerr.UnknownMemberID {
		t.Fatalf("leave: %v %v", gerr, errs)
	}
	// The leader left: b rejoins alone and leads.
	r := mustNow(t, c.Join(joinReq("g", b)), "b rejoins")
	if r.Generation != 3 || r.LeaderID != b {
		t.Fatalf("b: %+v", r)
	}
	syncAll(t, c, "g", 3, b, nil, map[string]string{b: "p0,p1"})
	if _, errs := c.Leave("g", []LeavingMember{{MemberID: b}}); errs[0] != nil {
		t.Fatalf("b leaves: %v", errs[0])
	}
	d, _ := c.Describe("g", false)
	if d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after everyone left: %+v", d)
	}
	if gerr, errs := c.Leave("nogroup", []LeavingMember{{MemberID: b}}); gerr != nil || errs[0] != kerr.UnknownMemberID {
		t.Fatalf("leave unknown group: %v %v", gerr, errs)
	}
}

func TestLeaveWhileOthersWaitInJoin(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, chA := joinNew(t, c, joinReq("g", ""))
	mustNow(t, chA, "a")
	_, chB := joinNew(t, c, joinReq("g", ""))
	mustWait(t, chB, "b waits for a")
	c.Leave("g", []LeavingMember{{MemberID: a}})
	rb := mustNow(t, chB, "b once a left")
	if rb.Err != nil || rb.Generation != 2 || rb.LeaderID != rb.MemberID {
		t.Fatalf("b: %+v", rb)
	}
}

func TestJoinErrors(t *testing.T) {
	c, _ := newTestCoordinator(t)
	req := joinReq("g", "")
	req.SessionTimeout = time.Second
	wantErr(t, "session timeout below the minimum", mustNow(t, c.Join(req), "").Err, kerr.InvalidSessionTimeout)
	req.SessionTimeout = time.Hour
	wantErr(t, "session timeout above the maximum", mustNow(t, c.Join(req), "").Err, kerr.InvalidSessionTimeout)
	wantErr(t, "empty group id", mustNow(t, c.Join(joinReq("", "")), "").Err, kerr.InvalidGroupID)
	wantErr(t, "member id for an unknown group", mustNow(t, c.Join(joinReq("g", "stale")), "").Err, kerr.UnknownMemberID)
	req = joinReq("g", "")
	req.Protocols = nil
	wantErr(t, "no protocols", mustNow(t, c.Join(req), "").Err, kerr.InconsistentGroupProtocol)

	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a")
	req = joinReq("g", "")
	req.ProtocolType = "connect"
	wantErr(t, "other protocol type", mustNow(t, c.Join(req), "").Err, kerr.InconsistentGroupProtocol)
	req = joinReq("g", "")
	req.Protocols = []Protocol{{Name: "sticky"}}
	wantErr(t, "no common protocol", mustNow(t, c.Join(req), "").Err, kerr.InconsistentGroupProtocol)
	// A sole member may change its protocols.
	req = joinReq("g", a)
	req.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: consumerMeta("t")}}
	r := mustNow(t, c.Join(req), "a changes protocols")
	if r.Err != nil || *r.Protocol != "cooperative-sticky" {
		t.Fatalf("a: %+v", r)
	}

	c.Deactivate()
	wantErr(t, "not the leader", mustNow(t, c.Join(joinReq("g", "")), "").Err, kerr.NotCoordinator)
	if ls, err := c.List([]string{"g"}, nil); err != nil || len(ls) != 0 {
		t.Fatalf("a follower lists %v %v, want nothing and no error", ls, err)
	}
	c.Load()
	wantErr(t, "loading", mustNow(t, c.Join(joinReq("g", "")), "").Err, kerr.CoordinatorLoadInProgress)
	c.Close()
	wantErr(t, "closed", mustNow(t, c.Join(joinReq("g", "")), "").Err, kerr.CoordinatorNotAvailable)
}

func TestDeactivateAnswersWaiters(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, chA := joinNew(t, c, joinReq("g", ""))
	mustNow(t, chA, "a")
	_, chB := joinNew(t, c, joinReq("g", ""))
	mustWait(t, chB, "b")
	c.Deactivate()
	wantErr(t, "b after leadership is lost", mustNow(t, chB, "b").Err, kerr.NotCoordinator)
	c.Activate(nil)
	wantErr(t, "a's heartbeat on the new coordinator", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 1, MemberID: a}), kerr.UnknownMemberID)
	wantErr(t, "a's commit on the new coordinator", c.ValidateCommit("g", 1, a, nil, noOffsets), kerr.IllegalGeneration)
}

func TestProtocolSelectionByVotes(t *testing.T) {
	c, _ := newTestCoordinator(t)
	both := func(first, second string) []Protocol {
		return []Protocol{{Name: first, Metadata: consumerMeta("t")}, {Name: second, Metadata: consumerMeta("t")}}
	}
	reqA := joinReq("g", "")
	reqA.Protocols = both("range", "cooperative-sticky")
	a, chA := joinNew(t, c, reqA)
	mustNow(t, chA, "a")
	var waits []<-chan JoinResult
	for i := 0; i < 2; i++ {
		req := joinReq("g", "")
		req.Protocols = both("cooperative-sticky", "range")
		_, ch := joinNew(t, c, req)
		waits = append(waits, ch)
	}
	reqA.MemberID = a
	r := mustNow(t, c.Join(reqA), "a rejoins")
	if *r.Protocol != "cooperative-sticky" {
		t.Fatalf("protocol %q, want the one two of three prefer", *r.Protocol)
	}
	for _, ch := range waits {
		if r := mustNow(t, ch, "others"); *r.Protocol != "cooperative-sticky" {
			t.Fatalf("protocol %q", *r.Protocol)
		}
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	c, clk := newTestCoordinator(t, func(cfg *Config) { cfg.InitialRebalanceDelay = 3 * time.Second })
	_, chA := joinNew(t, c, joinReq("g", ""))
	clk.Advance(2 * time.Second)
	c.Tick()
	mustWait(t, chA, "a during the delay")
	_, chB := joinNew(t, c, joinReq("g", ""))
	clk.Advance(1 * time.Second)
	c.Tick()
	mustWait(t, chA, "a: b arrived during the delay, so it is extended")
	clk.Advance(3 * time.Second)
	c.Tick()
	ra, rb := mustNow(t, chA, "a"), mustNow(t, chB, "b")
	if ra.Generation != 1 || rb.Generation != 1 || ra.LeaderID != ra.MemberID || len(ra.Members) != 2 {
		t.Fatalf("a %+v b %+v: want both in generation 1", ra, rb)
	}
}

func TestLegacyJoinWithoutMemberIDRequired(t *testing.T) {
	c, _ := newTestCoordinator(t)
	req := joinReq("g", "")
	req.RequireKnownMemberID = false // JoinGroup v0-v3
	req.RebalanceTimeout = 0         // v0: the session timeout serves
	r := mustNow(t, c.Join(req), "v0 join")
	if r.Err != nil || r.Generation != 1 || r.MemberID == "" {
		t.Fatalf("v0 join: %+v", r)
	}
}

func TestRejoinDuringCompletingRepeatsAnswer(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("g", ""))
	r1 := mustNow(t, ch, "a")
	r2 := mustNow(t, c.Join(joinReq("g", a)), "a again, same metadata")
	if r2.Generation != r1.Generation || len(r2.Members) != 1 {
		t.Fatalf("repeat: %+v, first %+v", r2, r1)
	}
	// Changed metadata starts a new rebalance.
	req := joinReq("g", a)
	req.Protocols = []Protocol{{Name: "range", Metadata: consumerMeta("t", "u")}}
	r3 := mustNow(t, c.Join(req), "a with another subscription")
	if r3.Generation != r1.Generation+1 {
		t.Fatalf("changed metadata: %+v", r3)
	}
	// A SyncGroup waiting when a rebalance starts is told so.
	b, chB := joinNew(t, c, joinReq("g", ""))
	chA := c.Join(joinReq("g", a))
	mustNow(t, chA, "a")
	mustNow(t, chB, "b")
	chSB := c.Sync(SyncRequest{Group: "g", Generation: r3.Generation + 1, MemberID: b})
	mustWait(t, chSB, "b waits for the leader")
	req = joinReq("g", a)
	req.Protocols = []Protocol{{Name: "range", Metadata: consumerMeta("v")}}
	c.Join(req)
	wantErr(t, "b's sync", mustNow(t, chSB, "b").Err, kerr.RebalanceInProgress)
}
