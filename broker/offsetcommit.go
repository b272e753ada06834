package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
)

// offsetCommit stores a group's offsets through raft, after the group
// coordinator has checked that the committer may (a current member of the
// current generation, or a client without a group while the group has no
// members).
//
// Commits from one connection are proposed in the order they were sent
// (wire.Request.InOrder), as Kafka handles them, so a later commit is never
// overwritten by an earlier one.
func (b *Broker) offsetCommit(ctx context.Context, req *wire.Request, r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetCommitResponse()
	type slot struct{ t, p int }
	var offsets []raftstore.OffsetCommit
	var slots []slot
	gerr := b.groups.ValidateCommit(r.Group, r.Generation, r.MemberID, r.InstanceID, func() bool { return b.hasOffsets(r.Group) })
	for ti, rt := range r.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		t, known := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case gerr != nil:
				sp.ErrorCode = gerr.Code
			case !known || rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > b.cfg.OffsetMetadataMaxBytes:
				sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				o := raftstore.OffsetCommit{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: -1}
				if r.Version >= 6 {
					o.LeaderEpoch = rp.LeaderEpoch
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				offsets = append(offsets, o)
				slots = append(slots, slot{ti, len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(offsets) == 0 {
		return resp
	}
	var errs []error
	var err error
	if oerr := req.InOrder(ctx, func() {
		errs, err = b.store.CommitOffsets(ctx, time.Now().UnixMilli(), r.Group, offsets)
	}); oerr != nil {
		err = raftstore.ErrUnknownOutcome
	}
	for i, s := range slots {
		sp := &resp.Topics[s.t].Partitions[s.p]
		switch {
		case err != nil:
			sp.ErrorCode = coordinatorErrorCode(err)
		case i < len(errs) && errs[i] != nil:
			sp.ErrorCode = errorCode(errs[i])
		}
	}
	if err != nil {
		b.logger.Debug("offset commit failed", "group", r.Group, "err", err)
	}
	return resp
}
