// Package cluster administers a brokerd cluster's raft membership over the
// admin HTTP API (GET /v1/cluster, POST and DELETE /v1/cluster/members,
// POST /v1/cluster/leader): list members, add and remove voters, and
// transfer leadership. Any member's admin address works; a member that
// does not lead forwards the change to the leader. `brokerd cluster
// members|add|remove|transfer-leader` are thin shells over it.
//
// Kafka's protocol has no membership API for a raft cluster of brokers, so
// this client speaks brokerd's admin HTTP, not Kafka.
package cluster
