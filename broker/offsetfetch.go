package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

// fetchedOffset is one partition's answer: the committed offset, or -1.
type fetchedOffset struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
}

// offsetFetch returns committed offsets: of one group (v0-v7) or of a
// batch of groups (v8+), for the partitions asked or, with null topics
// (v2+), every partition the group has committed. A group or partition
// without a commit answers offset -1 and no error, as Kafka does.
// With RequireStable (v7+), a partition whose offset is staged in an open
// transaction answers UNSTABLE_OFFSET_COMMIT, which clients retry.
func (b *Broker) offsetFetch(r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			want := map[string][]int32{}
			var order []string
			if rg.Topics != nil {
				for _, t := range rg.Topics {
					if _, dup := want[t.Topic]; !dup {
						order = append(order, t.Topic)
					}
					want[t.Topic] = append(want[t.Topic], t.Partitions...)
				}
			}
			if err := b.groups.Status(); err != nil {
				g.ErrorCode = err.Code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			for _, t := range b.fetchOffsets(rg.Group, rg.Topics == nil, order, want) {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.topic
				for _, o := range t.offsets {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch = o.partition, o.offset, o.leaderEpoch
					md := o.metadata
					gp.Metadata = &md
					if r.RequireStable && b.store.PendingTxnOffset(rg.Group, t.topic, o.partition) {
						gp.ErrorCode = kerr.UnstableOffsetCommit.Code
					}
					gt.Partitions = append(gt.Partitions, gp)
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}

	want := map[string][]int32{}
	var order []string
	for _, t := range r.Topics {
		if _, dup := want[t.Topic]; !dup {
			order = append(order, t.Topic)
		}
		want[t.Topic] = append(want[t.Topic], t.Partitions...)
	}
	all := r.Topics == nil && r.Version >= 2
	if err := b.groups.Status(); err != nil {
		if r.Version >= 2 {
			resp.ErrorCode = err.Code
			return resp
		}
		// v0-v1 have no group-wide error: every partition carries it.
		for _, name := range order {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = name
			for _, p := range want[name] {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, t := range b.fetchOffsets(r.Group, all, order, want) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.topic
		for _, o := range t.offsets {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = o.partition, o.offset, o.leaderEpoch
			md := o.metadata
			rp.Metadata = &md
			if r.Version >= 7 && r.RequireStable && b.store.PendingTxnOffset(r.Group, t.topic, o.partition) {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

type fetchedTopic struct {
	topic   string
	offsets []fetchedOffset
}

// fetchOffsets reads a group's committed offsets: all of them, or the
// partitions in want (topics in order).
func (b *Broker) fetchOffsets(groupID string, all bool, order []string, want map[string][]int32) []fetchedTopic {
	fromCommit := func(o raftstore.OffsetCommit) fetchedOffset {
		return fetchedOffset{partition: o.Partition, offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata}
	}
	var out []fetchedTopic
	if all {
		for _, o := range b.store.GroupOffsets(groupID) { // sorted by topic, partition
			if len(out) == 0 || out[len(out)-1].topic != o.Topic {
				out = append(out, fetchedTopic{topic: o.Topic})
			}
			t := &out[len(out)-1]
			t.offsets = append(t.offsets, fromCommit(o))
		}
		return out
	}
	for _, name := range order {
		t := fetchedTopic{topic: name}
		for _, p := range want[name] {
			o, ok := b.store.GroupOffset(groupID, name, p)
			if !ok {
				t.offsets = append(t.offsets, fetchedOffset{partition: p, offset: -1, leaderEpoch: -1})
				continue
			}
			t.offsets = append(t.offsets, fromCommit(o))
		}
		out = append(out, t)
	}
	return out
}
