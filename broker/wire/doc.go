// Package wire owns the Kafka wire protocol transport of brokerd: the TCP
// listener and its connections, request framing (the int32 size prefix),
// request header decoding (header v0, v1 and the flexible v2 with tagged
// fields), decoding request bodies into kmsg types, and encoding responses
// with the right response header.
//
// It also owns the protections that sit in front of the handlers: frame size
// caps checked before any allocation (Produce may be large, everything else is
// capped small), a server-wide memory budget for request frames in flight,
// a per-address connection limit, a per-connection pipelining limit, and the
// idle, read and write timeouts.
//
// Memory (budget.go, ticket.go, charge.go, source.go): a frame's size
// prefix and api key are read through the connection's small fixed read
// buffer; then the frame is admitted with one ticket for everything it may
// need, its frame and the most decoding it may allocate (for Produce
// twice its size, at most 8 MiB, as checkProduceCost enforces; for
// anything else 128 times its size, see decodeAmplification), before its
// buffer is allocated. A frame waits for its ticket holding nothing, so
// no set of frames can wait on each other; once decoded the ticket
// shrinks to the frame plus what the request holds (footprint), and it
// is released once the response is written or the request dropped. A frame not admitted by its read
// deadline closes its connection.
//
// Fairness: waiting frames queue per source (an IPv4 address or an IPv6
// /64), first come first served within a source; sources take turns, and
// a source's head that does not fit never holds back another source's
// frame that does. A head that has waited past a second gets room kept
// for it, and under contention a source already holding half the budget
// waits for the others. An eighth of the budget is kept for small frames,
// up to an allowance per source, so Metadata, Heartbeat and ApiVersions
// are answered promptly whatever large frames do. A source is forgotten
// when its last connection and ticket are gone.
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
