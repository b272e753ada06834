// Package throttle enforces client quotas as Kafka's ClientQuotaManager
// does: each quota entity a client maps to (raftstore/quota.Index.Resolve)
// has a sliding-window rate per quota key, and a request that takes the
// rate over the quota earns a throttle time: how long the client must stay
// silent for the rate to come back to the quota.
//
// The hot path (Manager.Record) does not allocate and takes no global
// lock: clients are found in a sharded map under read locks, and each rate
// has a mutex of its own, shared only by the clients of one quota entity.
package throttle
