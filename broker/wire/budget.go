package wire

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// budget is a FIFO weighted semaphore over bytes: the memory budget for
// request frames in flight. FIFO order keeps a large frame from starving
// behind a stream of small ones.
type budget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiters  list.List // of *budgetWaiter, oldest first
}

type budgetWaiter struct {
	n     int64
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
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.used+n <= b.capacity {
		b.used += n
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
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

// grantLocked wakes waiters in order while the oldest one fits.
func (b *budget) grantLocked() {
	for front := b.waiters.Front(); front != nil; front = b.waiters.Front() {
		w := front.Value.(*budgetWaiter)
		if b.used+w.n > b.capacity {
			return
		}
		b.used += w.n
		b.waiters.Remove(front)
		close(w.ready)
	}
}

// inUse reports the bytes currently charged.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
