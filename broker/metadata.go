package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// metadata answers Metadata with the brokers' addresses on the listener the
// request came in on.
//
// A topic to auto-create needs Create on the cluster or on the topic (a
// nil authorizer allows it): decided here, where it is created, so that
// the check and the creation see the topic alike (authMetadata checks
// Describe only).
func (b *Broker) metadata(ctx context.Context, listener string, r *kmsg.MetadataRequest, a *authCtx) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	brokers := b.brokersOn(listener)
	on := make(map[int32]bool, len(brokers))
	for _, br := range brokers {
		on[br.NodeID] = true
	}
	topicMetadata := func(t topic.Topic) kmsg.MetadataResponseTopic { return b.topicMetadata(t, on, r.Version) }
	for _, br := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = br.NodeID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := b.clusterID()
	resp.ClusterID = &cid
	resp.ControllerID = -1
	if id, ok := b.store.Leader(); ok {
		resp.ControllerID = id
	}

	// v0: an empty list means all topics. v1+: null means all, empty none.
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		for _, t := range b.internalTopics() {
			resp.Topics = append(resp.Topics, topicMetadata(t))
		}
		for _, t := range b.store.Topics() {
			if topic.IsInternal(t.Name) {
				continue // an older brokerd's ordinary topic: hidden
			}
			resp.Topics = append(resp.Topics, topicMetadata(t))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			t, ok := b.topicByID(rt.TopicID)
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, topicMetadata(t))
			continue
		}
		name := *rt.Topic
		t, ok := b.lookupTopic(name)
		if !ok {
			code := kerr.UnknownTopicOrPartition.Code
			if err := topic.ValidateName(name); err != nil {
				code = kerr.InvalidTopicException.Code
			} else if autoCreate && !topic.IsInternal(name) && !b.store.RecentlyDeleted(name, time.Now()) {
				if !a.mayCreateTopic(name) {
					code = topicDenied
				} else if created, err := b.autoCreate(ctx, name); err == nil {
					resp.Topics = append(resp.Topics, topicMetadata(created))
					continue
				} else if code = errorCode(err); code == kerr.UnknownServerError.Code {
					code = kerr.LeaderNotAvailable.Code
				}
			}
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, topicMetadata(t))
	}
	return resp
}

// autoCreate creates a topic on first use, as auto.create.topics.enable does.
func (b *Broker) autoCreate(ctx context.Context, name string) (topic.Topic, error) {
	err := b.store.CreateTopic(ctx, name, topic.NewID(), b.cfg.NumPartitions, nil)
	if err != nil && !errors.Is(err, raftstore.ErrTopicExists) {
		return topic.Topic{}, err
	}
	b.logger.Info("auto-created topic", "topic", name, "partitions", b.cfg.NumPartitions)
	t, ok := b.store.Topic(name)
	if !ok {
		return topic.Topic{}, raftstore.ErrUnknownTopic
	}
	return t, nil
}

// topicMetadata describes a topic's partitions to a client of a listener
// that the brokers in on have. A leader without that listener is one the
// client cannot reach: as Kafka, the partition has no leader and the error
// LISTENER_NOT_FOUND (LEADER_NOT_AVAILABLE before Metadata v6).
func (b *Broker) topicMetadata(t topic.Topic, on map[int32]bool, version int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = topic.IsInternal(t.Name)
	replicas := b.replicaIDs()
	isr := b.inSync(replicas)
	epoch := b.store.LeaderEpoch()
	for i := int32(0); i < t.Partitions; i++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		leader, ok := b.store.PartitionLeader(t.Name, i)
		switch {
		case !ok:
			leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		case !on[leader]:
			leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			if version >= 6 {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			}
		}
		mp.Leader = leader
		mp.LeaderEpoch = epoch
		mp.Replicas = replicas
		mp.ISR = isr
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// brokers lists registered brokers; before this node has registered itself
// (the first moments after start) it stands in for itself.
func (b *Broker) brokers() []raftstore.BrokerInfo {
	bs := b.store.Brokers()
	if len(bs) == 0 {
		bs = []raftstore.BrokerInfo{b.store.Self()}
	}
	return bs
}

// brokersOn lists registered brokers with the advertised address of the
// listener called listener. As Kafka, a broker without that listener is left
// out; a broker from before listeners were registered keeps its one address.
func (b *Broker) brokersOn(listener string) []raftstore.BrokerInfo {
	all := b.brokers()
	out := all[:0:0]
	for _, br := range all {
		if on, ok := br.On(listener); ok {
			out = append(out, on)
		}
	}
	return out
}

// replicaIDs are the replicas of every partition: the raft voters that
// registered a Kafka address (one raft group holds every partition).
func (b *Broker) replicaIDs() []int32 {
	voters := map[int32]bool{}
	for _, id := range b.store.Voters() {
		voters[id] = true
	}
	var ids []int32
	for _, br := range b.brokers() {
		if len(voters) == 0 || voters[br.NodeID] {
			ids = append(ids, br.NodeID)
		}
	}
	return ids
}

// inSync filters replicas to those the leader has heard from within
// replica.lag.time.max.ms.
func (b *Broker) inSync(replicas []int32) []int32 {
	now := time.Now()
	out := make([]int32, 0, len(replicas))
	for _, id := range replicas {
		if b.store.InSync(id, b.cfg.ReplicaLag, now) {
			out = append(out, id)
		}
	}
	return out
}

// Internal topics' IDs, derived from their names once.
var (
	offsetsTopicID = internalTopicID(topic.ConsumerOffsetsTopic)
	txnTopicID     = internalTopicID(topic.TransactionStateTopic)
)

// topicNameByID finds a topic's name, internal ones included, by its ID,
// from the store's index of topics by ID.
func (b *Broker) topicNameByID(id [16]byte) (string, bool) {
	switch id {
	case offsetsTopicID:
		return topic.ConsumerOffsetsTopic, true
	case txnTopicID:
		if b.store.HasTxns() {
			return topic.TransactionStateTopic, true
		}
	}
	return b.store.TopicNameByID(id)
}

// topicByID finds a topic, internal ones included, by its UUID.
func (b *Broker) topicByID(id [16]byte) (topic.Topic, bool) {
	if name, ok := b.topicNameByID(id); ok {
		return b.lookupTopic(name)
	}
	return topic.Topic{}, false
}

// lookupTopic finds a topic by name, internal ones included.
func (b *Broker) lookupTopic(name string) (topic.Topic, bool) {
	if t, ok := b.internalTopic(name); ok {
		return t, true
	}
	return b.store.Topic(name)
}
