package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/topic"
)

// offsetForLeaderEpoch tells a consumer where an epoch it saw ended, so it
// can detect log truncation (KIP-320).
func (b *Broker) offsetForLeaderEpoch(r *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	leader := b.store.IsLeader()
	cur := b.store.LeaderEpoch()
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			if topic.IsInternal(rt.Topic) {
				// An empty log: every epoch ends at offset 0.
				if sp.ErrorCode = leaderCheck(b.internalPartition(rt.Topic, rp.Partition), leader, rp.CurrentLeaderEpoch, cur); sp.ErrorCode == 0 {
					sp.LeaderEpoch, sp.EndOffset = cur, 0
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l, ok := b.store.Log(rt.Topic, rp.Partition)
			sp.ErrorCode = leaderCheck(ok, leader, rp.CurrentLeaderEpoch, cur)
			switch {
			case sp.ErrorCode != 0:
			case rp.LeaderEpoch >= cur:
				// The current epoch is still open: it ends at the log end.
				sp.LeaderEpoch, sp.EndOffset = cur, l.EndOffset()
			default:
				e, off, _ := b.store.EndOffsetForEpoch(rt.Topic, rp.Partition, rp.LeaderEpoch)
				sp.LeaderEpoch, sp.EndOffset = e, off
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
