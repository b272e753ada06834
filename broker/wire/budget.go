package wire

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// budget is a weighted semaphore over bytes: the memory budget for request
// frames in flight. A frame is charged, in one acquire and before its
// buffer exists, what it will hold; nothing that waits holds any of it, so
// waiters cannot wait on each other.
//
// Charges may also be bounded per source (an owner: one connection, and
// the client address it shares with others), so that a few connections
// that declare large frames and send nothing cannot hold the room
// everyone else needs. A frame larger than a bound is charged the bound
// there (it proceeds alone for that source) but its whole size in the
// budget, so the budget still counts every byte held.
//
// A waiter that fits is granted even if an older one does not (a frame
// waiting for room never holds up requests that fit), until the oldest
// waiter kept out by the budget's room (not by its own source's bound) has
// waited maxBypass: then grants go in order, so a large frame is not
// starved by a stream of small ones.
type budget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	waiters  list.List // of *budgetWaiter, oldest first

	// Per-source bounds (0: none) and the addresses' use.
	connCap, addrCap int64
	addrs            map[string]*addrUse
}

// maxBypass is how long younger waiters may be granted ahead of an older
// one that does not fit.
const maxBypass = 200 * time.Millisecond

type budgetWaiter struct {
	c     charges
	o     *budgetOwner
	since time.Time
	ready chan struct{}
}

// budgetOwner is one connection's share of the budget.
type budgetOwner struct {
	used int64
	addr *addrUse
}

// addrUse is one client address's share, across its connections.
type addrUse struct {
	key         string
	used        int64
	connections int
}

// charges are what one acquire takes: n from the budget, and the
// (clamped) amounts counted against its connection and address.
type charges struct{ n, conn, addr int64 }

func newBudget(capacity int64) *budget {
	return &budget{capacity: capacity, addrs: map[string]*addrUse{}}
}

// withSourceCaps bounds what one connection and one client address may
// hold.
func (b *budget) withSourceCaps(conn, addr int64) *budget {
	b.connCap, b.addrCap = conn, addr
	return b
}

// owner registers a connection from client address addr.
func (b *budget) owner(addr string) *budgetOwner {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.addrs[addr]
	if a == nil {
		a = &addrUse{key: addr}
		b.addrs[addr] = a
	}
	a.connections++
	return &budgetOwner{addr: a}
}

// closeOwner unregisters a connection; its address is forgotten once no
// connection uses it and nothing it charged is held.
func (b *budget) closeOwner(o *budgetOwner) {
	if o == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o.addr.connections--
	b.forgetLocked(o.addr)
}

func (b *budget) forgetLocked(a *addrUse) {
	if a.connections <= 0 && a.used <= 0 {
		delete(b.addrs, a.key)
	}
}

// charge returns what a request of n bytes is charged: n, clamped to the
// whole budget so that a frame larger than the budget can proceed alone.
func (b *budget) charge(n int64) int64 {
	return min(max(n, 0), b.capacity)
}

// chargesFor is what o is charged for n bytes.
func (b *budget) chargesFor(n int64, o *budgetOwner) charges {
	c := charges{n: b.charge(n)}
	if o != nil {
		c.conn, c.addr = c.n, c.n
		if b.connCap > 0 {
			c.conn = min(c.n, b.connCap)
		}
		if b.addrCap > 0 {
			c.addr = min(c.n, b.addrCap)
		}
	}
	return c
}

// roomFor reports whether the budget has room for c.
func (b *budget) roomFor(c charges) bool { return b.used+c.n <= b.capacity }

// sourceAllows reports whether o's bounds allow c.
func (b *budget) sourceAllows(c charges, o *budgetOwner) bool {
	if o == nil {
		return true
	}
	return (b.connCap <= 0 || o.used+c.conn <= b.connCap) && (b.addrCap <= 0 || o.addr.used+c.addr <= b.addrCap)
}

func (b *budget) takeLocked(c charges, o *budgetOwner) {
	b.used += c.n
	if o != nil {
		o.used += c.conn
		o.addr.used += c.addr
	}
}

// acquire waits until the budget and o's bounds can hold n bytes (clamped,
// see charge) or ctx is done. It returns the amount charged, to be given
// to release with the same owner. o may be nil: no per-source bounds.
func (b *budget) acquire(ctx context.Context, n int64, o *budgetOwner) (int64, error) {
	c := b.chargesFor(n, o)
	if c.n == 0 {
		return 0, nil
	}
	now := time.Now()
	b.mu.Lock()
	if b.roomFor(c) && b.sourceAllows(c, o) && !b.inOrderLocked(now) {
		b.takeLocked(c, o)
		b.mu.Unlock()
		return c.n, nil
	}
	w := &budgetWaiter{c: c, o: o, since: now, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return c.n, nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we were giving up: hand it back.
			b.returnLocked(c, o)
		default:
			b.waiters.Remove(elem)
		}
		b.grantLocked()
		b.mu.Unlock()
		return 0, fmt.Errorf("waiting for %d bytes of in-flight budget: %w", c.n, ctx.Err())
	}
}

// release returns n bytes that acquire charged o.
func (b *budget) release(n int64, o *budgetOwner) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.returnLocked(b.chargesFor(n, o), o)
	b.grantLocked()
	b.mu.Unlock()
}

// returnLocked gives c back. It clamps rather than panics on an accounting
// bug; tests assert that the budget returns to zero.
func (b *budget) returnLocked(c charges, o *budgetOwner) {
	b.used = max(b.used-c.n, 0)
	if o != nil {
		o.used = max(o.used-c.conn, 0)
		o.addr.used = max(o.addr.used-c.addr, 0)
		b.forgetLocked(o.addr)
	}
}

// inOrderLocked reports whether grants must go in order: the oldest
// waiter kept out by the budget's room has waited maxBypass.
func (b *budget) inOrderLocked(now time.Time) bool {
	for e := b.waiters.Front(); e != nil; e = e.Next() {
		w := e.Value.(*budgetWaiter)
		if !b.sourceAllows(w.c, w.o) {
			continue // its own source holds it back, not the budget
		}
		return !b.roomFor(w.c) && now.Sub(w.since) >= maxBypass
	}
	return false
}

// grantLocked wakes every waiter that fits, oldest first. A waiter its
// own source's bound keeps out never holds up others; one the budget's
// room keeps out does, once it has waited maxBypass.
func (b *budget) grantLocked() {
	now := time.Now()
	for e := b.waiters.Front(); e != nil; {
		w := e.Value.(*budgetWaiter)
		next := e.Next()
		switch {
		case !b.sourceAllows(w.c, w.o):
		case !b.roomFor(w.c):
			if now.Sub(w.since) >= maxBypass {
				return
			}
		default:
			b.takeLocked(w.c, w.o)
			b.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
}

// inUse reports the bytes currently charged.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
