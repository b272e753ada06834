package wire

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// budget is a weighted semaphore over bytes: the memory budget for request
// frames in flight. A frame is charged in one acquire, before its buffer
// exists, so nothing that waits holds any of it and waiters cannot wait on
// each other. A waiter that fits is granted even if an older one does not
// (a frame waiting for room never holds up requests that fit), until the
// oldest waiter that does not fit has waited maxBypass: from then on
// grants go in order, so a large frame is not starved by a stream of
// smaller ones, except that a small request (at most smallCharge) always
// goes ahead when it fits: it cannot starve anyone, and an idle client
// that declared a large frame must not hold up heartbeats and metadata.
type budget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiters  list.List // of *budgetWaiter, oldest first
}

// maxBypass is how long younger waiters may be granted ahead of an older
// one that does not fit.
const maxBypass = 200 * time.Millisecond

// smallCharge: requests up to this size go ahead of older waiters
// whenever they fit.
const smallCharge = 64 << 10

type budgetWaiter struct {
	n     int64
	since time.Time
	ready chan struct{}
}

func newBudget(capacity int64) *budget {
	return &budget{capacity: capacity}
}

// charge returns what a request of n bytes is charged: n, clamped to the
// whole budget so that a frame larger than the budget can proceed alone.
func (b *budget) charge(n int64) int64 {
	return min(max(n, 0), b.capacity)
}

// acquire waits until the budget can hold n bytes (clamped, see charge) or
// ctx is done. It returns the amount charged, to be given to release.
func (b *budget) acquire(ctx context.Context, n int64) (int64, error) {
	n = b.charge(n)
	now := time.Now()
	b.mu.Lock()
	if b.used+n <= b.capacity && (n <= smallCharge || !b.inOrderLocked(now)) {
		b.used += n
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, since: now, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we were giving up: hand it back.
			b.used -= n
		default:
			b.waiters.Remove(elem)
		}
		b.grantLocked()
		b.mu.Unlock()
		return 0, fmt.Errorf("waiting for %d bytes of in-flight budget: %w", n, ctx.Err())
	}
}

// tryAcquire charges n bytes if they fit now, without waiting, and
// reports whether it did.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n <= 0 {
		return true
	}
	if b.used+n > b.capacity {
		return false
	}
	b.used += n
	return true
}

// release returns n bytes charged by acquire.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	// Clamp rather than panic on an accounting bug; tests assert that the
	// budget returns to zero.
	b.used = max(b.used-n, 0)
	b.grantLocked()
	b.mu.Unlock()
}

// inOrderLocked reports whether grants must go in order: the oldest
// waiter has waited maxBypass.
func (b *budget) inOrderLocked(now time.Time) bool {
	front := b.waiters.Front()
	return front != nil && now.Sub(front.Value.(*budgetWaiter).since) >= maxBypass
}

// grantLocked wakes every waiter that fits, oldest first; once the oldest
// has waited maxBypass, only in order, small requests apart.
func (b *budget) grantLocked() {
	ordered, small := b.inOrderLocked(time.Now()), false
	for e := b.waiters.Front(); e != nil; {
		w := e.Value.(*budgetWaiter)
		next := e.Next()
		if b.used+w.n > b.capacity {
			if ordered {
				ordered = false
				small = true // from here on only small requests pass
			}
			e = next
			continue
		}
		if small && w.n > smallCharge {
			e = next
			continue
		}
		b.used += w.n
		b.waiters.Remove(e)
		close(w.ready)
		e = next
	}
}

// inUse reports the bytes currently charged.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
