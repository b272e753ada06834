package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/topic"
)

// Special ListOffsets timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
	maxTimestamp      = -3 // KIP-734, v7+
)

func (b *Broker) listOffsets(r *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	leader := b.store.IsLeader()
	epoch := b.store.LeaderEpoch()
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if topic.IsInternal(rt.Topic) {
				// An internal topic's partitions are empty logs.
				sp.ErrorCode = leaderCheck(b.internalPartition(rt.Topic, rp.Partition), leader, rp.CurrentLeaderEpoch, epoch)
				if sp.ErrorCode == 0 {
					sp.LeaderEpoch = epoch
					if ts := rp.Timestamp; ts == latestTimestamp || ts == earliestTimestamp {
						sp.Offset = 0
					}
				}
				if r.Version == 0 && sp.Offset >= 0 && rp.MaxNumOffsets > 0 {
					sp.OldStyleOffsets = []int64{sp.Offset}
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l, ok := b.store.Log(rt.Topic, rp.Partition)
			sp.ErrorCode = leaderCheck(ok, leader, rp.CurrentLeaderEpoch, epoch)
			switch {
			case sp.ErrorCode != 0:
			default:
				sp.LeaderEpoch = epoch
				switch ts := rp.Timestamp; ts {
				case latestTimestamp:
					sp.Offset = l.EndOffset()
					if r.IsolationLevel == 1 {
						sp.Offset = b.store.LastStableOffset(rt.Topic, rp.Partition)
					}
				case earliestTimestamp:
					sp.Offset = l.StartOffset()
				case maxTimestamp:
					off, found, ok, err := l.MaxTimestampOffset()
					switch {
					case err != nil:
						sp.ErrorCode = errorCode(err)
					case ok:
						sp.Offset, sp.Timestamp = off, found
					}
				default:
					if ts < 0 {
						sp.ErrorCode = kerr.InvalidRequest.Code
						break
					}
					off, found, ok, err := l.OffsetForTimestamp(ts)
					switch {
					case err != nil:
						sp.ErrorCode = errorCode(err)
					case ok:
						sp.Offset, sp.Timestamp = off, found
					}
				}
			}
			if r.Version == 0 && sp.ErrorCode == 0 {
				// v0 answers with a list of offsets.
				if rp.MaxNumOffsets > 0 && sp.Offset >= 0 {
					sp.OldStyleOffsets = []int64{sp.Offset}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
