package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

func (b *Broker) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateTopicsResponse()
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		err := b.createTopic(ctx, rt, r.ValidateOnly, seen[rt.Topic] > 1, &st)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			st.NumPartitions, st.ReplicationFactor = -1, -1
			st.Configs = nil
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) createTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly, dup bool, st *kmsg.CreateTopicsResponseTopic) error {
	if dup {
		return fmt.Errorf("%w: topic %s appears more than once in the request", kerr.InvalidRequest, rt.Topic)
	}
	if err := topic.ValidateName(rt.Topic); err != nil {
		return err
	}
	if topic.IsInternal(rt.Topic) {
		if _, ok := b.internalTopic(rt.Topic); ok {
			return fmt.Errorf("%w: %s", raftstore.ErrTopicExists, rt.Topic)
		}
		return fmt.Errorf("%w: %s is one of Kafka's internal topic names; it appears once it is in use", kerr.InvalidTopicException, rt.Topic)
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return fmt.Errorf("%w: both a replica assignment and partitions/replication factor given", kerr.InvalidRequest)
		}
		partitions = int32(len(rt.ReplicaAssignment))
		rf = int16(len(rt.ReplicaAssignment[0].Replicas))
		if err := b.checkAssignment(rt.ReplicaAssignment); err != nil {
			return err
		}
	}
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if partitions <= 0 {
		return fmt.Errorf("%w: partitions must be positive, got %d", raftstore.ErrInvalidPartitions, partitions)
	}
	if n := len(b.brokers()); rf <= 0 || int(rf) > n {
		return fmt.Errorf("%w: replication factor %d with %d brokers", raftstore.ErrInvalidReplicationFactor, rf, n)
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			continue
		}
		configs[c.Name] = *c.Value
	}
	if err := topic.ValidateConfigs(configs); err != nil {
		return err
	}
	if _, exists := b.store.Topic(rt.Topic); exists {
		return fmt.Errorf("%w: %s", raftstore.ErrTopicExists, rt.Topic)
	}
	id := topic.NewID()
	if !validateOnly {
		if err := b.store.CreateTopic(ctx, rt.Topic, id, partitions, configs); err != nil {
			return err
		}
		if t, ok := b.store.Topic(rt.Topic); ok {
			id = t.ID
		}
		b.logger.Info("created topic", "topic", rt.Topic, "partitions", partitions)
	}
	st.TopicID = id
	st.NumPartitions = partitions
	st.ReplicationFactor = rf
	for _, c := range b.topicConfigEntries(configs, nil, false, false) {
		cc := kmsg.NewCreateTopicsResponseTopicConfig()
		cc.Name, cc.Value, cc.ReadOnly, cc.Source, cc.IsSensitive = c.Name, c.Value, c.ReadOnly, int8(c.Source), c.IsSensitive
		st.Configs = append(st.Configs, cc)
	}
	return nil
}

// checkAssignment accepts a manual assignment only if it names live
// brokers; with one raft group, placement itself does not change.
func (b *Broker) checkAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) error {
	ids := map[int32]bool{}
	for _, id := range b.replicaIDs() {
		ids[id] = true
	}
	for i, a := range as {
		if a.Partition != int32(i) || len(a.Replicas) != len(as[0].Replicas) {
			return fmt.Errorf("%w: partitions must be numbered 0..n-1 with equal replica counts", kerr.InvalidReplicaAssignment)
		}
		for _, r := range a.Replicas {
			if !ids[r] {
				return fmt.Errorf("%w: unknown broker %d", kerr.InvalidReplicaAssignment, r)
			}
		}
	}
	return nil
}

func (b *Broker) deleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	reqs := r.Topics
	if r.Version < 6 {
		reqs = nil
		for _, n := range r.TopicNames {
			reqs = append(reqs, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	for _, rt := range reqs {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var name string
		if rt.Topic != nil {
			name = *rt.Topic
		} else if t, ok := b.topicByID(rt.TopicID); ok {
			name = t.Name
			st.Topic = &name
		} else {
			st.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if t, ok := b.lookupTopic(name); ok {
			st.TopicID = t.ID
		}
		_, legacy := b.store.Topic(name)
		if topic.IsInternal(name) && !legacy {
			err := internalTopicWrite(name, "delete")
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		} else if err := b.store.DeleteTopic(ctx, name); err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		} else {
			b.logger.Info("deleted topic", "topic", name)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	for _, rt := range r.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		t, ok := b.store.Topic(rt.Topic)
		switch {
		case topic.IsInternal(rt.Topic):
			err = internalTopicWrite(rt.Topic, "add partitions to")
		case !ok:
			err = fmt.Errorf("%w: %s", raftstore.ErrUnknownTopic, rt.Topic)
		case rt.Count <= t.Partitions:
			err = fmt.Errorf("%w: topic %s has %d partitions; the count can only grow", raftstore.ErrInvalidPartitions, rt.Topic, t.Partitions)
		case rt.Assignment != nil && len(rt.Assignment) != int(rt.Count-t.Partitions):
			err = fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(rt.Assignment), rt.Count-t.Partitions)
		case r.ValidateOnly:
		default:
			err = b.store.CreatePartitions(ctx, rt.Topic, rt.Count)
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
