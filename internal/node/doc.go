// Package node assembles one brokerd process: the raft store, the Kafka
// listener, and the admin HTTP listener, in the order that lets each find
// the others. cmd/brokerd, the benchmarks and the end-to-end tests start
// brokers through it.
package node
