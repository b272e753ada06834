package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDescribeListDelete(t *testing.T) {
	c, _ := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("live", ""))
	mustNow(t, ch, "a")
	d, err := c.Describe("live", false)
	if err != nil || d.State != "CompletingRebalance" || d.Protocol != "" || len(d.Members) != 1 || d.Members[0].Metadata != nil {
		t.Fatalf("describe while completing: %+v %v", d, err)
	}
	syncAll(t, c, "live", 1, a, nil, map[string]string{a: "x"})

	if d, _ := c.Describe("nothing", false); d.State != "Dead" {
		t.Fatalf("unknown group: %+v", d)
	}
	if d, _ := c.Describe("offsets-only", true); d.State != "Empty" {
		t.Fatalf("offsets-only group: %+v", d)
	}

	ls, err := c.List([]string{"offsets-only", "live"}, nil)
	if err != nil || len(ls) != 2 || ls[0] != (Listing{"live", "consumer", "Stable"}) || ls[1] != (Listing{"offsets-only", "", "Empty"}) {
		t.Fatalf("list: %+v %v", ls, err)
	}
	ls, _ = c.List([]string{"offsets-only"}, []string{"empty"})
	if len(ls) != 1 || ls[0].Group != "offsets-only" {
		t.Fatalf("list empty: %+v", ls)
	}
	ls, _ = c.List(nil, []string{"Stable", "PreparingRebalance"})
	if len(ls) != 1 || ls[0].Group != "live" {
		t.Fatalf("list stable: %+v", ls)
	}

	wantErr(t, "delete a live group", c.Delete("live", true), kerr.NonEmptyGroup)
	wantErr(t, "delete an unknown group", c.Delete("nothing", false), kerr.GroupIDNotFound)
	wantErr(t, "delete an offsets-only group", c.Delete("offsets-only", true), nil)
	c.Leave("live", []LeavingMember{{MemberID: a}})
	wantErr(t, "delete once empty", c.Delete("live", true), nil)
	if ls, _ := c.List(nil, nil); len(ls) != 0 {
		t.Fatalf("list after deletes: %+v", ls)
	}
}

func TestValidateCommit(t *testing.T) {
	c, _ := newTestCoordinator(t)
	wantErr(t, "simple commit, unknown group", c.ValidateCommit("g", -1, "", nil, noOffsets), nil)
	wantErr(t, "member commit, unknown group", c.ValidateCommit("g", 3, "m", nil, noOffsets), kerr.IllegalGeneration)
	wantErr(t, "member commit, offsets-only group", c.ValidateCommit("g", 3, "m", nil, withOffsets), kerr.UnknownMemberID)
	wantErr(t, "member id without generation", c.ValidateCommit("g", -1, "m", nil, noOffsets), kerr.UnknownMemberID)
	a, ch := joinNew(t, c, joinReq("g", ""))
	mustNow(t, ch, "a")
	syncAll(t, c, "g", 1, a, nil, map[string]string{a: "x"})
	wantErr(t, "member", c.ValidateCommit("g", 1, a, nil, withOffsets), nil)
	wantErr(t, "unknown member", c.ValidateCommit("g", 1, "other", nil, withOffsets), kerr.UnknownMemberID)
	wantErr(t, "simple commit to a live group", c.ValidateCommit("g", -1, "", nil, withOffsets), kerr.UnknownMemberID)
	c.Leave("g", []LeavingMember{{MemberID: a}})
	wantErr(t, "simple commit to an empty group", c.ValidateCommit("g", -1, "", nil, withOffsets), nil)
	c.Deactivate()
	wantErr(t, "not the leader", c.ValidateCommit("g", -1, "", nil, withOffsets), kerr.NotCoordinator)
}

func TestOffsetDeleteCheck(t *testing.T) {
	c, _ := newTestCoordinator(t)
	if _, err := c.OffsetDeleteCheck("nothing", false); err != kerr.GroupIDNotFound {
		t.Fatalf("unknown group: %v", err)
	}
	sub, err := c.OffsetDeleteCheck("offsets-only", true)
	if err != nil || sub("t") {
		t.Fatalf("offsets-only group: %v", err)
	}
	req := joinReq("g", "")
	req.Protocols = []Protocol{{Name: "range", Metadata: consumerMeta("t1", "t2")}}
	_, ch := joinNew(t, c, req)
	mustNow(t, ch, "a")
	sub, err = c.OffsetDeleteCheck("g", true)
	if err != nil || !sub("t1") || !sub("t2") || sub("t3") {
		t.Fatalf("consumer group: %v t1=%v t2=%v t3=%v", err, sub("t1"), sub("t2"), sub("t3"))
	}
	req = joinReq("connect", "")
	req.ProtocolType = "connect"
	_, ch = joinNew(t, c, req)
	mustNow(t, ch, "connect member")
	if _, err := c.OffsetDeleteCheck("connect", true); err != kerr.NonEmptyGroup {
		t.Fatalf("non-consumer group with members: %v", err)
	}
	req = joinReq("junk", "")
	req.Protocols = []Protocol{{Name: "range", Metadata: []byte{0xff}}}
	_, ch = joinNew(t, c, req)
	mustNow(t, ch, "junk member")
	if sub, err := c.OffsetDeleteCheck("junk", true); err != nil || !sub("anything") {
		t.Fatalf("unparsable subscription must protect every topic: %v", err)
	}
}

func TestExpirableGroupsAndSweep(t *testing.T) {
	const week = 7 * 24 * time.Hour
	c, clk := newTestCoordinator(t)
	a, ch := joinNew(t, c, joinReq("live", ""))
	mustNow(t, ch, "a")
	syncAll(t, c, "live", 1, a, nil, map[string]string{a: "x"})
	b, ch := joinNew(t, c, joinReq("left", ""))
	mustNow(t, ch, "b")
	syncAll(t, c, "left", 1, b, nil, map[string]string{b: "x"})
	clk.Advance(week / 2)
	c.Leave("left", []LeavingMember{{MemberID: b}})
	all := []string{"live", "left", "offsets-only"}
	if got := c.ExpirableGroups(all, week); len(got) != 0 {
		t.Fatalf("after half the retention: %v", got)
	}
	clk.Advance(week / 2)
	c.Heartbeat(HeartbeatRequest{Group: "live", Generation: 1, MemberID: a})
	if got := c.ExpirableGroups(all, week); !slices.Equal(got, []string{"offsets-only"}) {
		t.Fatalf("a week after activation: %v, want the offsets-only group", got)
	}
	clk.Advance(week / 2)
	if got := c.ExpirableGroups(all, week); !slices.Equal(got, []string{"left", "offsets-only"}) {
		t.Fatalf("a week after 'left' emptied: %v", got)
	}
	c.Sweep(func(g string) bool { return g != "left" })
	if ls, _ := c.List(nil, nil); len(ls) != 1 || ls[0].Group != "live" {
		t.Fatalf("after sweeping empty groups without offsets: %+v", ls)
	}
}
