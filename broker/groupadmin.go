package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is the authorized-operations bitfield of a group when
// asked for while the authorizer is off: READ (3), DELETE (6) and
// DESCRIBE (8). With it on, authDescribeGroups reports the principal's.
const groupOperations = 1<<3 | 1<<6 | 1<<8

// describeGroups describes each group. A group that does not exist is
// described as Dead without an error (GROUP_ID_NOT_FOUND is v6+).
func (b *Broker) describeGroups(r *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range r.Groups {
		d, err := b.groups.Describe(id, b.hasOffsets(id))
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.ErrorCode = errCode(err)
		rg.State, rg.ProtocolType, rg.Protocol = d.State, d.ProtocolType, d.Protocol
		if r.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = groupOperations
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// listGroups lists the groups with members and those known only by their
// committed offsets (v4: filtered by state).
func (b *Broker) listGroups(r *kmsg.ListGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrListGroupsResponse()
	ls, err := b.groups.List(b.store.OffsetGroups(), r.StatesFilter)
	if err != nil {
		resp.ErrorCode = err.Code
		return resp
	}
	for _, l := range ls {
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = l.Group, l.ProtocolType, l.State
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// deleteGroups deletes empty groups and their committed offsets.
func (b *Broker) deleteGroups(ctx context.Context, r *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		has := b.hasOffsets(id)
		if err := b.groups.Delete(id, has); err != nil {
			rg.ErrorCode = err.Code
		} else if has {
			if err := b.store.DeleteOffsets(ctx, id, nil, true); err != nil {
				rg.ErrorCode = coordinatorErrorCode(err)
				b.logger.Warn("delete group offsets failed", "group", id, "err", err)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
