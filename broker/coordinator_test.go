package broker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// newTestBroker opens a one-node store in a temporary directory and a
// Broker over it, and waits until the group coordinator is active.
func newTestBroker(t testing.TB, tweak func(*Config)) *Broker {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := raftstore.Open(raftstore.Config{
		NodeID:   1,
		DataDir:  t.TempDir(),
		RaftAddr: "127.0.0.1:0",
		Broker:   raftstore.BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092},
		Logger:   logger,
	})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	cfg := Config{NodeID: 1, ClusterID: "test", Logger: logger, GroupInitialRebalanceDelay: -1}
	if tweak != nil {
		tweak(&cfg)
	}
	b := New(cfg, s)
	t.Cleanup(func() {
		b.Close()
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !b.groups.Active() {
		if time.Now().After(deadline) {
			t.Fatal("group coordinator not active after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.CreateTopic(context.Background(), "t", topic.NewID(), 2, nil); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	return b
}

// call runs one request at a version through the broker.
func call[R kmsg.Response](t *testing.T, b *Broker, req kmsg.Request, version int16) R {
	t.Helper()
	req.SetVersion(version)
	resp, err := b.Handle(context.Background(), &wire.Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: version}, Msg: req})
	if err != nil {
		t.Fatalf("api %d v%d: %v", req.Key(), version, err)
	}
	return resp.(R)
}

func commitReq(group string, gen int32, member string, offset int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Group, r.Generation, r.MemberID = group, gen, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func TestFindCoordinator(t *testing.T) {
	b := newTestBroker(t, nil)
	for v := int16(0); v <= 3; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey = "g"
		resp := call[*kmsg.FindCoordinatorResponse](t, b, r, v)
		if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != 9092 {
			t.Errorf("v%d: %+v", v, resp)
		}
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.CoordinatorKeys = []string{"a", "b"}
	resp := call[*kmsg.FindCoordinatorResponse](t, b, r, 4)
	if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "b" || resp.Coordinators[1].NodeID != 1 || resp.Coordinators[1].ErrorCode != 0 {
		t.Errorf("v4 batch: %+v", resp.Coordinators)
	}
	// Transactional ids are coordinated by the raft leader too.
	r.CoordinatorType = 1
	resp = call[*kmsg.FindCoordinatorResponse](t, b, r, 5)
	if c := resp.Coordinators[0]; c.ErrorCode != 0 || c.NodeID != 1 {
		t.Errorf("transaction key: %+v", c)
	}
	r.CoordinatorType = 7
	resp = call[*kmsg.FindCoordinatorResponse](t, b, r, 5)
	if c := resp.Coordinators[0]; c.ErrorCode != kerr.InvalidRequest.Code || c.NodeID != -1 {
		t.Errorf("unknown key type: %+v", c)
	}
}

func TestOffsetCommitFetchVersions(t *testing.T) {
	b := newTestBroker(t, nil)
	for v := int16(0); v <= 9; v++ {
		r := commitReq("simple", -1, "", int64(10+v))
		if v >= 6 {
			r.Topics[0].Partitions[0].LeaderEpoch = 7
		}
		md := "meta"
		r.Topics[0].Partitions[0].Metadata = &md
		if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, r, v)); got[0] != 0 || got[1] != 0 {
			t.Fatalf("commit v%d: %v", v, got)
		}
		for fv := int16(0); fv <= 9; fv++ {
			f := kmsg.NewPtrOffsetFetchRequest()
			var p0 int64
			var epoch int32
			var meta string
			if fv >= 8 {
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = "simple"
				f.Groups = append(f.Groups, g) // null topics: everything
				resp := call[*kmsg.OffsetFetchResponse](t, b, f, fv)
				p := resp.Groups[0].Topics[0].Partitions[0]
				p0, epoch, meta = p.Offset, p.LeaderEpoch, *p.Metadata
			} else {
				f.Group = "simple"
				ft := kmsg.NewOffsetFetchRequestTopic()
				ft.Topic, ft.Partitions = "t", []int32{0, 1}
				f.Topics = append(f.Topics, ft)
				resp := call[*kmsg.OffsetFetchResponse](t, b, f, fv)
				p := resp.Topics[0].Partitions[0]
				p0, epoch, meta = p.Offset, p.LeaderEpoch, *p.Metadata
			}
			wantEpoch := int32(-1)
			if v >= 6 {
				wantEpoch = 7
			}
			if p0 != int64(10+v) || meta != "meta" || (fv >= 5 && epoch != wantEpoch) {
				t.Fatalf("commit v%d fetch v%d: offset %d epoch %d metadata %q", v, fv, p0, epoch, meta)
			}
		}
	}

	// An unknown group answers -1, not an error.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Group = "nobody"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0}
	f.Topics = append(f.Topics, ft)
	resp := call[*kmsg.OffsetFetchResponse](t, b, f, 7)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].Offset != -1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("unknown group: %+v", resp)
	}

	// Errors: unknown topic, metadata too large, a stale member.
	r := commitReq("simple", -1, "", 1)
	r.Topics[0].Topic = "nope"
	if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, r, 8)); got[0] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %v", got)
	}
	r = commitReq("simple", -1, "", 1)
	big := string(make([]byte, 5000))
	r.Topics[0].Partitions[1].Metadata = &big
	if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, r, 8)); got[0] != 0 || got[1] != kerr.OffsetMetadataTooLarge.Code {
		t.Errorf("metadata too large: %v", got)
	}
	if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, commitReq("fresh", 5, "m", 1), 8)); got[0] != kerr.IllegalGeneration.Code {
		t.Errorf("member commit to an unknown group: %v", got)
	}
	if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, commitReq("simple", 5, "m", 1), 8)); got[0] != kerr.UnknownMemberID.Code {
		t.Errorf("member commit to an offsets-only group: %v", got)
	}
}

func TestGroupAdminAPIs(t *testing.T) {
	b := newTestBroker(t, nil)
	call[*kmsg.OffsetCommitResponse](t, b, commitReq("offsets-only", -1, "", 3), 8)

	// One live member.
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = "live", 10000, 10000, "consumer"
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{"t"}
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	jr := call[*kmsg.JoinGroupResponse](t, b, j, 5)
	if jr.ErrorCode != kerr.MemberIDRequired.Code || jr.MemberID == "" {
		t.Fatalf("first join v5: %+v", jr)
	}
	j.MemberID = jr.MemberID
	jr = call[*kmsg.JoinGroupResponse](t, b, j, 5)
	if jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 {
		t.Fatalf("join v5: %+v", jr)
	}
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = "live", 1, jr.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte("a")}}
	if sr := call[*kmsg.SyncGroupResponse](t, b, s, 3); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "a" {
		t.Fatalf("sync: %+v", sr)
	}
	call[*kmsg.OffsetCommitResponse](t, b, commitReq("live", 1, jr.MemberID, 3), 8)

	l := kmsg.NewPtrListGroupsRequest()
	lr := call[*kmsg.ListGroupsResponse](t, b, l, 4)
	if len(lr.Groups) != 2 || lr.Groups[0].Group != "live" || lr.Groups[0].GroupState != "Stable" || lr.Groups[1].GroupState != "Empty" {
		t.Fatalf("list: %+v", lr.Groups)
	}
	l.StatesFilter = []string{"Empty"}
	if lr := call[*kmsg.ListGroupsResponse](t, b, l, 4); len(lr.Groups) != 1 || lr.Groups[0].Group != "offsets-only" {
		t.Fatalf("list Empty: %+v", lr.Groups)
	}

	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"live", "offsets-only", "missing"}
	dr := call[*kmsg.DescribeGroupsResponse](t, b, d, 5)
	if g := dr.Groups[0]; g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "a" {
		t.Fatalf("describe live: %+v", g)
	}
	if dr.Groups[1].State != "Empty" || dr.Groups[2].State != "Dead" || dr.Groups[2].ErrorCode != 0 {
		t.Fatalf("describe others: %+v", dr.Groups[1:])
	}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "live"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}, {Topic: "nope", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	odr := call[*kmsg.OffsetDeleteResponse](t, b, od, 0)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || odr.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("offset delete from a live group: %+v", odr)
	}
	od.Group = "offsets-only"
	if odr := call[*kmsg.OffsetDeleteResponse](t, b, od, 0); odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", odr)
	}
	if _, ok := b.store.GroupOffset("offsets-only", "t", 0); ok {
		t.Fatal("offset of partition 0 still there after OffsetDelete")
	}
	od.Group = "missing"
	if odr := call[*kmsg.OffsetDeleteResponse](t, b, od, 0); odr.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("offset delete, unknown group: %+v", odr)
	}

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"live", "offsets-only", "missing"}
	dgr := call[*kmsg.DeleteGroupsResponse](t, b, dg, 2)
	if dgr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || dgr.Groups[1].ErrorCode != 0 || dgr.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", dgr.Groups)
	}
	if len(b.store.GroupOffsets("offsets-only")) != 0 {
		t.Fatal("offsets of a deleted group remain")
	}

	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "live", jr.MemberID
	if r := call[*kmsg.LeaveGroupResponse](t, b, lv, 1); r.ErrorCode != 0 {
		t.Fatalf("leave v1: %+v", r)
	}
	if r := call[*kmsg.LeaveGroupResponse](t, b, lv, 1); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave again v1: %+v", r)
	}
	dg.Groups = []string{"live"}
	if dgr := call[*kmsg.DeleteGroupsResponse](t, b, dg, 2); dgr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete the emptied group: %+v", dgr.Groups)
	}
}

func TestOffsetsOfEmptyGroupsExpire(t *testing.T) {
	b := newTestBroker(t, func(c *Config) {
		c.OffsetsRetention = 300 * time.Millisecond
		c.OffsetsRetentionCheckInterval = 100 * time.Millisecond
	})
	call[*kmsg.OffsetCommitResponse](t, b, commitReq("abandoned", -1, "", 3), 8)
	// A member keeps its group alive (heartbeats for the test's length).
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.ProtocolType = "kept", 30000, "consumer"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	jr := call[*kmsg.JoinGroupResponse](t, b, j, 1)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.Generation, s.MemberID = "kept", jr.Generation, jr.MemberID
	call[*kmsg.SyncGroupResponse](t, b, s, 0)
	if got := commitCodes(call[*kmsg.OffsetCommitResponse](t, b, commitReq("kept", jr.Generation, jr.MemberID, 3), 2)); got[0] != 0 {
		t.Fatalf("member commit: %v", got)
	}

	deadline := time.Now().Add(10 * time.Second)
	for len(b.store.GroupOffsets("abandoned")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("offsets of an abandoned group did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(b.store.GroupOffsets("kept")) != 2 {
		t.Fatal("offsets of a group with a member expired")
	}
}
