// Package produce writes records to a Kafka-compatible cluster with
// franz-go: one record per input line (as kcat -P does), with an optional
// key separator, headers and a fixed partition. `brokerd produce` is a thin
// shell over it.
//
// Records are produced asynchronously and idempotently (franz-go's
// default), then flushed: Lines returns once every record is acknowledged
// or the first failure is known.
package produce
