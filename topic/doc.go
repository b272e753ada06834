// Package topic owns what a topic is, independent of storage, replication
// and the Kafka wire:
//
//   - the topic model stored by the state machine ([Topic]): name, topic ID,
//     partition count and the explicit config overrides;
//   - topic name rules ([ValidateName]), metric-name collisions
//     ([CollidesWith]) and the on-disk partition directory name
//     ([PartitionDir]);
//   - the topic configs, under Kafka's names, with Kafka's types, defaults,
//     valid ranges and broker-level synonyms ([Def], [Lookup], [Defs],
//     [ValidateConfigs]);
//   - resolving a topic's effective configs: topic overrides over broker
//     defaults over Kafka defaults, with the source of each value as
//     DescribeConfigs reports it ([Resolve], [Resolved], [Source]).
//
// The definitions follow Apache Kafka 3.9, the last release that still
// documents every config listed here (message.downconversion.enable and
// message.timestamp.difference.max.ms are gone in 4.0).
//
// The package imports neither the partition log nor raft nor any Kafka
// protocol package; callers convert a [Resolved] into whatever their layer
// needs.
package topic
