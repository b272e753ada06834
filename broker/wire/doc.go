// Package wire owns the Kafka wire protocol transport of brokerd: the TCP
// listener and its connections, request framing (the int32 size prefix),
// request header decoding (header v0, v1 and the flexible v2 with tagged
// fields), decoding request bodies into kmsg types, and encoding responses
// with the right response header.
//
// It also owns the protections that sit in front of the handlers: frame size
// caps checked before any allocation (Produce may be large, everything else is
// capped small), a server-wide memory budget for requests in flight,
// a per-address connection limit, a per-connection pipelining limit, and the
// idle, read and write timeouts.
//
// Memory (charge.go, budget.go, ticket.go, source.go): the budget is split
// in a frame pool and a decode pool. A frame's size prefix and api key are
// read through the connection's small fixed read buffer; a small frame
// (at most that buffer) is then read whole into it. The frame is admitted
// with a ticket of its size in the frame pool before its buffer is
// allocated, waiting holding nothing. Once its bytes are in memory it
// waits for decode room in the decode pool: for Produce what a pre-scan
// of the body finds (checkProduceCost), for anything else 128 times the
// frame (the worst case kmsg may allocate, decodeAmplification); after
// decoding that shrinks to what the request holds (footprint) and is
// given back when the handler returns. The decode pool is held only by
// decodes and handlers, which never wait for budget, so waiting for it
// while holding a frame cannot deadlock. The frame ticket is released
// once the response is written or the request dropped. A frame not
// admitted by its read deadline closes its connection. Non-Produce frames
// are capped so that their worst-case decode fits the decode pool, and
// Listen refuses a budget in which a frame of socket.request.max.bytes
// could never be admitted.
//
// Fairness: waiting frames queue per source (an IPv4 address or an IPv6
// /64), first come first served within a source. A source holds at most
// half the frame pool (beyond its reserve), whether or not others wait.
// Among the heads that fit, the one waiting longest goes first; a head
// that does not fit never holds back another that does, until it has
// waited a second: then room is kept for it, unless its source is at its
// share. A sixteenth of the budget is kept for small frames, up to an
// allowance per source, so Metadata, Heartbeat and ApiVersions are
// answered promptly whatever large frames do. A source is forgotten when
// its last connection and ticket are gone.
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
