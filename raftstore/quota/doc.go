// Package quota is the model of Kafka's client quotas (KIP-55, KIP-257,
// KIP-546): the entities a quota is set on (a user, a client id, or both,
// each named or the default), the quota keys (producer_byte_rate,
// consumer_byte_rate, request_percentage) and their validation, the
// immutable Index the broker reads, Kafka's precedence for the quota that
// applies to a client, and the DescribeClientQuotas filter.
//
// It holds no rates and no clock: enforcement is broker/throttle's job, and
// replication raftstore's.
package quota
