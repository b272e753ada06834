package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

// offsetDelete deletes some of a group's committed offsets. Offsets of
// topics a live member of the group consumes stay
// (GROUP_SUBSCRIBED_TO_TOPIC).
func (b *Broker) offsetDelete(ctx context.Context, r *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	subscribed, gerr := b.groups.OffsetDeleteCheck(r.Group, b.hasOffsets(r.Group))
	if gerr != nil {
		resp.ErrorCode = gerr.Code
		return resp
	}
	var parts []raftstore.TopicPartition
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		t, known := b.lookupTopic(rt.Topic)
		sub := known && subscribed(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !known || rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case sub:
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				parts = append(parts, raftstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(parts) > 0 {
		if err := b.store.DeleteOffsets(ctx, r.Group, parts, false); err != nil {
			resp.ErrorCode = coordinatorErrorCode(err)
			resp.Topics = nil
		}
	}
	return resp
}
