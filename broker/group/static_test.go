package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func staticReq(group, memberID, instance string) JoinRequest {
	r := joinReq(group, memberID)
	r.InstanceID = &instance
	r.RequireKnownMemberID = false // static members never get MEMBER_ID_REQUIRED
	return r
}

// stableStaticPair makes a Stable group of two static members, i1 leading.
func stableStaticPair(t *testing.T, c *Coordinator) (a, b string) {
	t.Helper()
	ra := mustNow(t, c.Join(staticReq("g", "", "i1")), "i1")
	a = ra.MemberID
	chB := c.Join(staticReq("g", "", "i2"))
	chA := c.Join(staticReq("g", a, "i1"))
	mustNow(t, chA, "i1 rejoins")
	b = mustNow(t, chB, "i2").MemberID
	syncAll(t, c, "g", 2, a, []string{b}, map[string]string{a: "p0", b: "p1"})
	return a, b
}

func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, b := stableStaticPair(t, c)

	// i2 restarts: it joins without its member id.
	r := mustNow(t, c.Join(staticReq("g", "", "i2")), "i2 restarted")
	if r.Err != nil || r.MemberID == b || r.Generation != 2 || r.LeaderID != a || len(r.Members) != 0 {
		t.Fatalf("restarted i2: %+v, want a new id in generation 2, no rebalance", r)
	}
	nb := r.MemberID
	s := mustNow(t, c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: nb, InstanceID: strPtr("i2")}), "sync")
	if s.Err != nil || string(s.Assignment) != "p1" {
		t.Fatalf("restarted i2's sync: %+v, want its old assignment", s)
	}
	wantErr(t, "a still stable", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), nil)
	wantErr(t, "the old incarnation", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: b, InstanceID: strPtr("i2")}), kerr.FencedInstanceID)
	wantErr(t, "the old incarnation commits", c.ValidateCommit("g", 2, b, strPtr("i2"), withOffsets), kerr.FencedInstanceID)
	if _, errs := c.Leave("g", []LeavingMember{{MemberID: b, InstanceID: strPtr("i2")}}); errs[0] != kerr.FencedInstanceID {
		t.Fatalf("the old incarnation leaves: %v", errs[0])
	}
}

func TestStaticLeaderRestart(t *testing.T) {
	for _, skip := range []bool{false, true} {
		c, _ := newTestCoordinator(t)
		a, b := stableStaticPair(t, c)
		req := staticReq("g", "", "i1")
		req.SupportSkipAssignment = skip
		r := mustNow(t, c.Join(req), "i1 restarted")
		if r.Err != nil || r.Generation != 2 {
			t.Fatalf("skip=%v: %+v", skip, r)
		}
		if skip {
			if r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 {
				t.Fatalf("v9 static leader: %+v, want to lead with the members and skip the assignment", r)
			}
		} else if r.LeaderID != a || len(r.Members) != 0 {
			// Before v9 the rejoined leader is told the old leader id, so
			// it acts as a follower and just syncs.
			t.Fatalf("pre-v9 static leader: %+v, want leader %s", r, a)
		}
		s := mustNow(t, c.Sync(SyncRequest{Group: "g", Generation: 2, MemberID: r.MemberID}), "sync")
		if s.Err != nil || string(s.Assignment) != "p0" {
			t.Fatalf("restarted leader's sync: %+v", s)
		}
		wantErr(t, "b", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: b}), nil)
	}
}

func TestStaticMemberChangedSubscriptionRebalances(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, _ := stableStaticPair(t, c)
	req := staticReq("g", "", "i2")
	req.Protocols = []Protocol{{Name: "range", Metadata: consumerMeta("t", "other")}}
	ch := c.Join(req)
	mustWait(t, ch, "i2 with a new subscription waits for a rebalance")
	wantErr(t, "a", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), kerr.RebalanceInProgress)
	mustNow(t, c.Join(staticReq("g", a, "i1")), "a rejoins")
	if r := mustNow(t, ch, "i2"); r.Generation != 3 {
		t.Fatalf("i2: %+v", r)
	}
}

func TestStaticOwnedPartitionsAreNotAChange(t *testing.T) {
	c, _ := newTestCoordinator(t)
	_, _ = stableStaticPair(t, c)
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 2
	md.Topics = []string{"t"}
	md.Generation = 2
	md.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: []int32{1}}}
	req := staticReq("g", "", "i2")
	req.Protocols = []Protocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	if r := mustNow(t, c.Join(req), "i2"); r.Err != nil || r.Generation != 2 {
		t.Fatalf("i2 with owned partitions in its metadata: %+v, want no rebalance", r)
	}
}

func TestStaticMemberSessionExpires(t *testing.T) {
	c, clk := newTestCoordinator(t)
	a, _ := stableStaticPair(t, c)
	for i := 0; i < 4; i++ {
		clk.Advance(3 * time.Second)
		c.Tick()
		c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a})
	}
	wantErr(t, "a after i2's session ended", c.Heartbeat(HeartbeatRequest{Group: "g", Generation: 2, MemberID: a}), kerr.RebalanceInProgress)
	if r := mustNow(t, c.Join(staticReq("g", a, "i1")), "a"); r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("a: %+v", r)
	}
}

func TestLeaveByInstanceID(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, _ := stableStaticPair(t, c)
	_, errs := c.Leave("g", []LeavingMember{{InstanceID: strPtr("i2")}, {InstanceID: strPtr("nope")}})
	if errs[0] != nil || errs[1] != kerr.UnknownMemberID {
		t.Fatalf("leave by instance id: %v", errs)
	}
	if r := mustNow(t, c.Join(staticReq("g", a, "i1")), "a"); r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("a: %+v", r)
	}
}

func TestStaticRejoinWhilePreparingFencesOldJoin(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, b := stableStaticPair(t, c)
	// A third member starts a rebalance; i2 rejoins with its old id, then
	// restarts and joins again without it.
	_, chC := joinNew(t, c, joinReq("g", ""))
	chB := c.Join(staticReq("g", b, "i2"))
	mustWait(t, chB, "i2")
	chB2 := c.Join(staticReq("g", "", "i2"))
	wantErr(t, "i2's old join", mustNow(t, chB, "old").Err, kerr.FencedInstanceID)
	mustNow(t, c.Join(staticReq("g", a, "i1")), "a")
	r := mustNow(t, chB2, "new i2")
	if r.Err != nil || r.Generation != 3 {
		t.Fatalf("new i2: %+v", r)
	}
	mustNow(t, chC, "c")
}
