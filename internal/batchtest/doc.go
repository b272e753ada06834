// Package batchtest builds valid Kafka v2 record batches for tests: the
// shape a client would send, with a correct length and CRC-32C.
package batchtest
