package broker

import (
	"crypto/sha256"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/topic"
)

// Kafka's internal topics. brokerd keeps committed offsets and transaction
// state in its replicated FSM, not in these topics, but clients and tools
// expect to see them in Metadata, marked internal, as Kafka shows them:
// regex consumers skip them, and topic listings show them. They hold no
// records: Fetch and ListOffsets answer for an empty log, and Produce,
// DeleteRecords, DeleteTopics, CreatePartitions and config changes are
// refused, as Kafka refuses writes to them.
//
// A store topic under one of these names (auto-created by an older brokerd)
// is hidden; DeleteTopics removes it.

// internalTopicConfigs are the overrides Kafka gives both topics.
var internalTopicConfigs = map[string]string{
	"cleanup.policy":   "compact",
	"compression.type": "producer",
	"segment.bytes":    "104857600",
}

// internalTopic returns an internal topic as Metadata shows it.
// __consumer_offsets always exists; __transaction_state once a transaction
// has run (Kafka creates it on the first transactional coordinator
// lookup).
func (b *Broker) internalTopic(name string) (topic.Topic, bool) {
	switch name {
	case topic.ConsumerOffsetsTopic:
	case topic.TransactionStateTopic:
		if !b.store.HasTxns() {
			return topic.Topic{}, false
		}
	default:
		return topic.Topic{}, false
	}
	return topic.Topic{Name: name, ID: internalTopicID(name), Partitions: topic.InternalPartitions, Configs: maps.Clone(internalTopicConfigs)}, true
}

// internalTopics lists the visible internal topics.
func (b *Broker) internalTopics() []topic.Topic {
	var out []topic.Topic
	for _, n := range []string{topic.ConsumerOffsetsTopic, topic.TransactionStateTopic} {
		if t, ok := b.internalTopic(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// internalTopicWrite is the error for changing an internal topic: Kafka
// answers INVALID_TOPIC_EXCEPTION to a write to one.
func internalTopicWrite(name, what string) error {
	return fmt.Errorf("%w: cannot %s internal topic %s (brokerd keeps its contents in replicated state)", kerr.InvalidTopicException, what, name)
}

// internalPartition reports whether partition is one of an internal
// topic's (visible) partitions.
func (b *Broker) internalPartition(name string, partition int32) bool {
	_, ok := b.internalTopic(name)
	return ok && topic.IsInternalPartition(name, partition)
}

// internalTopicID is a fixed topic ID for an internal topic, the same on
// every node and across restarts.
func internalTopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte("brokerd internal topic " + name))
	var id [16]byte
	copy(id[:], sum[:16])
	// Mark it a version 4 (random) UUID, as Kafka's topic IDs are.
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}
