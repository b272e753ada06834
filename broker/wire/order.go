package wire

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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
	// stopped is the connection's: set by StopOrder.
	stopped *atomic.Bool
}

// closedChan is the predecessor of a connection's first request.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newOrder(prev <-chan struct{}, stopped *atomic.Bool) *order {
	if prev == nil {
		prev = closedChan
	}
	return &order{prev: prev, done: make(chan struct{}), stopped: stopped}
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
// first, and ErrCloseInOrder, without running fn, if an earlier request
// stopped the connection (StopOrder). A Request built outside a
// connection runs fn at once.
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
	defer r.order.release()
	if r.order.stopped != nil && r.order.stopped.Load() {
		return fmt.Errorf("%w: an earlier request closed it", ErrCloseInOrder)
	}
	fn()
	return nil
}

// StopOrder marks the connection closing in request order: no later
// request runs its InOrder section, though it was read already. Call it
// within this request's own InOrder section, before returning
// ErrCloseInOrder: an acks=0 Produce refused is the last request the
// connection acts on, as in Kafka, which reads one request at a time.
func (r *Request) StopOrder() {
	if r.order != nil && r.order.stopped != nil {
		r.order.stopped.Store(true)
	}
}

// ReleaseOrder tells later requests on the connection that this one needs
// no ordering (a long-polling Fetch, say), so they need not wait for its
// handler to return.
func (r *Request) ReleaseOrder() {
	if r.order != nil {
		r.order.release()
	}
}
