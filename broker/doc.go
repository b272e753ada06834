// Package broker is brokerd's Kafka protocol server: the table of supported
// APIs and versions, and one handler per API, each turning a decoded kmsg
// request into reads of committed state or proposals to raftstore. Framing,
// connections and request decoding live in the sub-package wire.
package broker
