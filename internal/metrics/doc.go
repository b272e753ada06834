// Package metrics holds brokerd's Prometheus metrics, all named brokerd_*:
// request counts, errors and latencies per API, bytes and records produced
// and fetched, client connections, and collectors that read the raft store
// at scrape time (raft state, indexes and apply lag; per-partition log size
// and offsets; consumer-group lag). Each node has its own registry, so
// several nodes can run in one process (tests).
//
// Nothing here touches the request path beyond counter increments and one
// histogram observation per request; everything that reads the store runs
// only when /metrics is scraped.
package metrics
