package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

func (b *Broker) deleteRecords(ctx context.Context, r *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteRecordsResponse()
	type slot struct{ t, p int }
	var specs []raftstore.DeleteRecordsSpec
	var slots []slot
	leader := b.store.IsLeader()
	for ti, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if topic.IsInternal(rt.Topic) {
				err := internalTopicWrite(rt.Topic, "delete records of")
				sp.ErrorCode = errorCode(err)
			} else if _, ok := b.store.Log(rt.Topic, rp.Partition); !ok {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if !leader {
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			} else {
				specs = append(specs, raftstore.DeleteRecordsSpec{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset})
				slots = append(slots, slot{ti, len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(specs) == 0 {
		return resp
	}
	results, err := b.store.DeleteRecords(ctx, time.Now().UnixMilli(), specs)
	for i, s := range slots {
		sp := &resp.Topics[s.t].Partitions[s.p]
		switch {
		case err != nil:
			sp.ErrorCode = errorCode(err)
		case results[i].Err != nil:
			sp.ErrorCode = errorCode(results[i].Err)
		default:
			sp.LowWatermark = results[i].LowWatermark
		}
	}
	return resp
}
