// Package fetchsession keeps Kafka's incremental fetch sessions (KIP-227):
// the per-node cache of sessions, each the set of partitions a consumer
// fetches with the parameters it last sent and what it was last told, so
// that an incremental Fetch names only the partitions whose parameters
// changed and is answered with only the partitions that have news.
//
// It owns the session state machine (full, incremental and sessionless
// fetches; epochs; forgotten partitions; eviction by
// max.incremental.fetch.session.cache.slots as Kafka evicts) and nothing
// else: the broker reads the logs and encodes the response. Sessions are
// soft state of one node; a client that reaches another node (after a
// leader change, say) is told FETCH_SESSION_ID_NOT_FOUND and starts over
// with a full fetch, as with Kafka.
package fetchsession
