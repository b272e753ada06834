package wire

import (
	"context"
	"sync"
)

// order chains the requests of one connection. Handlers run concurrently,
// but a handler can run a section (Request.InOrder) only after every earlier
// request on its connection has run its own section or returned. Produce
// uses it to hand batches to raft in the order the client sent them, which
// pipelined idempotent producers rely on; the slow part (waiting for the
// commit) stays concurrent.
type order struct {
	prev <-chan struct{}
	done chan struct{}
	once sync.Once
}

// closedChan is the predecessor of a connection's first request.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newOrder(prev <-chan struct{}) *order {
	if prev == nil {
		prev = closedChan
	}
	return &order{prev: prev, done: make(chan struct{})}
}

// release lets later requests go once every earlier one has. It is safe to
// call more than once.
func (o *order) release() {
	o.once.Do(func() {
		select {
		case <-o.prev:
			close(o.done)
		default:
			go func() {
				<-o.prev
				close(o.done)
			}()
		}
	})
}

// InOrder runs fn after every earlier request on the same connection has
// finished its InOrder section or returned from its handler, then lets later
// requests go. It returns ctx's error, without running fn, if ctx ends
// first. A Request built outside a connection runs fn at once.
func (r *Request) InOrder(ctx context.Context, fn func()) error {
	if r.order == nil {
		fn()
		return nil
	}
	select {
	case <-r.order.prev:
	case <-ctx.Done():
		return ctx.Err()
	}
	fn()
	r.order.release()
	return nil
}

// ReleaseOrder tells later requests on the connection that this one needs
// no ordering (a long-polling Fetch, say), so they need not wait for its
// handler to return.
func (r *Request) ReleaseOrder() {
	if r.order != nil {
		r.order.release()
	}
}
