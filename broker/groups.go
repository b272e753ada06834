package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/group"
	"github.com/brokerd/brokerd/broker/wire"
)

// joinGroup answers JoinGroup once the rebalance it joins completes (or at
// once, for errors and for members that are told the current generation).
func (b *Broker) joinGroup(ctx context.Context, req *wire.Request, r *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	jr := group.JoinRequest{
		Group:                 r.Group,
		MemberID:              r.MemberID,
		InstanceID:            r.InstanceID,
		ClientID:              clientID(req.Header.ClientID),
		ClientHost:            clientHost(req.RemoteAddr),
		SessionTimeout:        millis(r.SessionTimeoutMillis),
		RebalanceTimeout:      millis(r.RebalanceTimeoutMillis),
		ProtocolType:          r.ProtocolType,
		RequireKnownMemberID:  r.Version >= 4 && r.InstanceID == nil,
		SupportSkipAssignment: r.Version >= 9,
	}
	if r.Version == 0 {
		// v0 has no rebalance timeout: the session timeout serves.
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range r.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	var res group.JoinResult
	select {
	case res = <-b.groups.Join(jr):
	case <-ctx.Done():
		return nil, fmt.Errorf("join group %q: %w", r.Group, ctx.Err())
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = errCode(res.Err)
	resp.Generation = res.Generation
	resp.ProtocolType = res.ProtocolType
	resp.Protocol = res.Protocol
	resp.LeaderID = res.LeaderID
	resp.SkipAssignment = res.SkipAssignment
	resp.MemberID = res.MemberID
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

// syncGroup answers SyncGroup with the member's part of the leader's
// assignment, once the leader has sent it.
func (b *Broker) syncGroup(ctx context.Context, r *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	sr := group.SyncRequest{
		Group:        r.Group,
		Generation:   r.Generation,
		MemberID:     r.MemberID,
		InstanceID:   r.InstanceID,
		ProtocolType: r.ProtocolType,
		Protocol:     r.Protocol,
	}
	for _, a := range r.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	var res group.SyncResult
	select {
	case res = <-b.groups.Sync(sr):
	case <-ctx.Done():
		return nil, fmt.Errorf("sync group %q: %w", r.Group, ctx.Err())
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = errCode(res.Err)
	resp.ProtocolType, resp.Protocol = res.ProtocolType, res.Protocol
	resp.MemberAssignment = res.Assignment
	return resp, nil
}

func (b *Broker) heartbeat(r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = errCode(b.groups.Heartbeat(group.HeartbeatRequest{
		Group:      r.Group,
		Generation: r.Generation,
		MemberID:   r.MemberID,
		InstanceID: r.InstanceID,
	}))
	return resp
}

// leaveGroup removes one member (v0-v2) or a batch (v3+, which may name
// static members by instance id alone).
func (b *Broker) leaveGroup(r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrLeaveGroupResponse()
	var leaving []group.LeavingMember
	if r.Version < 3 {
		leaving = []group.LeavingMember{{MemberID: r.MemberID}}
	} else {
		for _, m := range r.Members {
			leaving = append(leaving, group.LeavingMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	gerr, errs := b.groups.Leave(r.Group, leaving)
	if gerr != nil {
		resp.ErrorCode = gerr.Code
		return resp
	}
	if r.Version < 3 {
		resp.ErrorCode = errCode(errs[0])
		return resp
	}
	for i, m := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		rm.ErrorCode = errCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
