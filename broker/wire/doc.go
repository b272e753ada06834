// Package wire owns the Kafka wire protocol transport of brokerd: the TCP
// listener and its connections, request framing (the int32 size prefix),
// request header decoding (header v0, v1 and the flexible v2 with tagged
// fields), decoding request bodies into kmsg types, and encoding responses
// with the right response header.
//
// It also owns the protections that sit in front of the handlers: frame size
// caps checked before any allocation (Produce may be large, everything else is
// capped small), a server-wide memory budget for request frames in flight,
// a per-connection pipelining limit, and the idle, read and write timeouts.
//
// Memory: a frame is charged to the budget before its buffer is allocated.
// Produce is charged its size (records stay in the frame) after a pre-scan
// bounds what decoding its structure allocates. Any other frame is charged
// 128 times its size until it is decoded, because kmsg can allocate about
// 100 bytes per frame byte for crafted flexible requests (a map per tagged
// field section), then only its frame plus an estimate of what the decoded
// request holds. The charge is released once the response is written or
// the request dropped.
//
// Requests on one connection are read by one goroutine, each is answered by
// the Handler in its own goroutine, and a single writer goroutine sends the
// responses strictly in request order, batching those that are ready together
// into one write.
//
// The package knows nothing of what requests mean: the broker supplies a
// Handler that answers them and a Versions function that says which API
// versions are advertised. The only answer wire writes by itself is the
// KIP-511 fallback for an ApiVersions request at a version above the
// advertised maximum.
package wire
