// Package consume reads records from a Kafka-compatible cluster with
// franz-go, as kcat -C does: from the start, the end, an offset, a
// relative offset or a time; optionally in a consumer group (committing
// what it delivered); up to a count or to the end of the partitions. It
// also formats records with kcat-style templates (%t %p %o %k %v %T %h) or
// as JSON. `brokerd consume` is a thin shell over it.
package consume
