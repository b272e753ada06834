// Package node assembles one brokerd process: the raft store, the Kafka
// listener, and the admin HTTP listener, in the order that lets each find
// the others. cmd/brokerd, the benchmarks and the end-to-end tests start
// brokers through it.
//
// The node wraps the broker's request handler to count and time every
// request per API, count the bytes and records produced and fetched, and
// log each failed request once (rate-limited) with its API, client id and
// address. The admin listener serves /metrics (internal/metrics),
// /healthz, /readyz and pprof. Shutdown stops things in the order that
// loses nothing: unready, coordinator, drain, leadership, raft.
package node
