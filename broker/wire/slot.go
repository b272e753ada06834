package wire

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// slot is one request's place in its connection's response order. The
// reader creates it, a handler goroutine fills it, and the writer consumes
// it in order.
type slot struct {
	hdr  RequestHeader
	req  *Request // nil for answers wire makes itself
	resp kmsg.Response
	// raw, with rawToken, is a bare SASL token to write with only its
	// size prefix (after a v0 SaslHandshake).
	raw      []byte
	rawToken bool
	err      error
	done     chan struct{} // closed once resp and err are set

	// The frame's ticket is released when both the handler (which may
	// still reference the frame) and the writer are done with the slot;
	// its decode ticket (what the decoded request holds) once the handler
	// returns, when the request is dropped for the writer's sake.
	tk   ticket
	dtk  ticket
	refs atomic.Int32
}

// newSlot returns a slot waiting for a handler.
func newSlot(hdr RequestHeader, req *Request, tk, dtk ticket) *slot {
	s := &slot{hdr: hdr, req: req, done: make(chan struct{}), tk: tk, dtk: dtk}
	s.refs.Store(2)
	return s
}

// newAnsweredSlot returns a slot whose response is already known; its frame
// is no longer referenced, so it holds no budget.
func newAnsweredSlot(hdr RequestHeader, resp kmsg.Response) *slot {
	s := &slot{hdr: hdr, resp: resp, done: make(chan struct{})}
	close(s.done)
	s.refs.Store(1)
	return s
}

// newRawSlot returns an answered slot holding a bare SASL token.
func newRawSlot(token []byte) *slot {
	s := &slot{raw: token, rawToken: true, done: make(chan struct{})}
	close(s.done)
	s.refs.Store(1)
	return s
}

// finish records the handler's outcome and drops the handler's reference.
func (s *slot) finish(resp kmsg.Response, err error) {
	s.resp, s.err = resp, err
	if s.req != nil {
		s.req.Msg = nil // the writer needs only the frame
	}
	s.dtk.release()
	close(s.done)
	s.unref()
}

// unref drops one reference; the last one releases the frame's ticket and
// runs the request's AfterWrite functions if the writer never took them
// (the response was dropped, or failed to encode).
func (s *slot) unref() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.tk.release()
	if s.req != nil {
		for _, fn := range s.req.afterWrite {
			fn()
		}
		s.req.afterWrite = nil
	}
}
