// Command bench drives a Kafka broker with franz-go producers and consumers
// and prints a table of throughput and latency.
//
// Every run measures brokerd (started in-process in a temporary data
// directory, or an external broker given with -brokers) and franz-go's
// in-memory kfake in the same process, minutes apart, so every brokerd
// figure has a peer measured on the same machine under the same load. The
// table ends with the ratio target/kfake.
//
//	go run ./bench                      # all workloads, once
//	go run ./bench -count 3             # each run three times, then medians
//	go run ./bench -workloads produce-1k -records 200000
//	go run ./bench -brokers 127.0.0.1:9092
//	go run ./bench -json > out.json
//	go run ./bench -cpuprofile cpu.out  # then: go tool pprof -tagfocus bench=brokerd/server cpu.out
//
// Workloads live in a registry (workload.go); a new workload is a new entry.
// The produce workloads send pre-built values with acks=all and the
// idempotent producer (franz-go's default), many records in flight, and
// record the time from each Produce call to its promise. The consume phase
// then reads everything back from the start of the topic.
//
// The producer keeps -inflight records outstanding (10000 by default), so
// the latency figures are those of a saturated producer: mostly time spent
// queued in the client behind earlier batches, by Little's law about
// inflight / throughput. Lower -inflight to see latency at lighter load.
//
// -max-produce-version 3 caps the Produce API version. franz-go's
// idempotent producer then keeps one produce request in flight per broker
// instead of five, which is how to measure a broker that does not yet keep
// pipelined produce requests in order. -stall fails a run when no record
// is acknowledged for that long; -v logs the broker and the clients.
//
// With -cpuprofile, work is labelled with the pprof label "bench" set to
// "<target>/server" (the broker's goroutines) or "<target>/client" (the
// benchmark's franz-go clients), so one profile can be cut per side with
// -tagfocus. Garbage collection done by background workers carries no label.
package main
