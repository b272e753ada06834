package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// budget is one pool of the in-flight memory budget. A ticket for n bytes
// is granted whole, or its frame waits holding nothing of this pool.
//
// The server has two pools (see newPools): the frame pool, charged a
// frame's bytes before its buffer is allocated, and the decode pool,
// charged the room a frame's decoding may take once its bytes are all in
// memory. The frame pool keeps a reserve for small frames, which are only
// admitted once they have arrived whole.
//
// Rules, for the main part of a pool:
//   - A source (client address) never holds more than share bytes: a
//     ticket that would take it over waits, whether or not others wait.
//     A ticket larger than share is refused.
//   - Frames of one source are granted in arrival order; a waiting head
//     that does not fit never holds back another source's head that does.
//   - Among heads that fit, the one that has been a head longest goes
//     first, so sources take turns. Once a head has waited aging, room is
//     kept for it (nothing else is granted until it fits), unless its
//     source is at its share: a source cannot make others wait for room
//     it is not allowed to take.
//
// The reserve is for tickets of at most smallMax bytes, up to
// smallPerSource bytes per source, and never waits behind large frames.
//
// A grant pass looks only at the tops of two heaps and the front of the
// small-waiter list, so releasing a ticket costs O(log sources) whatever
// waits. Aging needs no timer: time passing never makes a head fit, it
// only makes room kept, and every decision (a pass, an arrival) reads the
// clock.
type budget struct {
	mu sync.Mutex

	name           string // for errors: "frame" or "decode"
	capacity       int64  // mainCap + reserve
	mainCap        int64
	reserve        int64
	share          int64 // most one source may hold of the main part
	smallPerSource int64 // reserve bytes one source may hold
	smallMax       int64 // largest ticket that may use the reserve
	aging          time.Duration
	maxConns       int // per source; 0 is no limit

	used        int64 // main part
	reserveUsed int64
	peak        int64 // high-water mark of used+reserveUsed, for tests
	total       *gauge

	sources map[sourceKey]*source

	// Sources whose large head may be granted (held+head.n <= share), by
	// how long the head has waited and by its size.
	byAge, bySize headHeap
	// Sources with small waiters, first come first served.
	smallFirst, smallLast *source
}

// gauge sums what the pools of a server hold, for the high-water mark.
type gauge struct {
	mu        sync.Mutex
	cur, peak int64
}

func (g *gauge) add(n int64) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.cur += n
	g.peak = max(g.peak, g.cur)
	g.mu.Unlock()
}

// Admission tuning.
const (
	// maxSmallPerSource caps one source's reserve allowance.
	maxSmallPerSource = 4 << 20
	// defaultAging is how long a head waits before room is kept for it.
	defaultAging = time.Second
)

// errTooLarge: a ticket larger than a source may ever hold.
var errTooLarge = errors.New("wire: frame larger than one client address may hold of the in-flight budget")

// waiter is a frame waiting for its ticket.
type waiter struct {
	n         int64
	small     bool // n <= smallMax: waits in the source's small queue
	src       *source
	headSince time.Time // when it became its queue's head
	ready     chan struct{}
	granted   bool
	t         ticket
}

// newBudget returns a pool of capacity bytes with no reserve, in which a
// source may hold all of it.
func newBudget(capacity int64) *budget {
	capacity = max(capacity, 1)
	return &budget{
		name:     "in-flight",
		capacity: capacity,
		mainCap:  capacity,
		share:    capacity,
		aging:    defaultAging,
		sources:  make(map[sourceKey]*source),
		bySize:   headHeap{bySize: true},
	}
}

// withReserve sets aside reserve bytes of b for tickets of at most
// smallMax bytes.
func (b *budget) withReserve(reserve, smallMax int64) *budget {
	reserve = min(max(reserve, 0), b.capacity)
	b.reserve = reserve
	b.mainCap = b.capacity - reserve
	b.share = min(b.share, b.mainCap)
	b.smallPerSource = min(reserve/4, maxSmallPerSource)
	b.smallMax = min(smallMax, b.smallPerSource)
	return b
}

// openConn counts a new connection from key and returns its source, or
// an error if the source already has maxConns connections.
func (b *budget) openConn(key sourceKey) (*source, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sources[key]
	if s == nil {
		s = &source{key: key, ageIdx: -1, sizeIdx: -1}
		b.sources[key] = s
	}
	if b.maxConns > 0 && s.conns >= b.maxConns {
		b.forgetLocked(s)
		return nil, fmt.Errorf("%s already has %d connections: %w", key, s.conns, errTooManyConns)
	}
	s.conns++
	s.refs++
	return s, nil
}

// closeConn forgets a connection counted by openConn.
func (b *budget) closeConn(s *source) {
	b.mu.Lock()
	s.conns--
	s.refs--
	b.forgetLocked(s)
	b.mu.Unlock()
}

// forgetLocked drops s from the map once nothing refers to it.
func (b *budget) forgetLocked(s *source) {
	if s.refs == 0 && b.sources[s.key] == s {
		delete(b.sources, s.key)
	}
}

// acquire returns a ticket of n bytes for src. It waits until the ticket
// is granted, ctx is done, stop is closed or deadline passes. A ticket
// larger than a source's share is refused at once.
func (b *budget) acquire(ctx context.Context, stop <-chan struct{}, src *source, n int64, deadline time.Time) (ticket, error) {
	n = max(n, 0)
	if n > b.share {
		return ticket{}, fmt.Errorf("%d bytes, above the %d one address may hold of the %s pool: %w", n, b.share, b.name, errTooLarge)
	}
	small := n <= b.smallMax
	b.mu.Lock()
	if small && len(src.smallQ) == 0 && b.fitsReserveLocked(src, n) {
		t := b.chargeLocked(src, n, true)
		b.mu.Unlock()
		return t, nil
	}
	if (small && len(src.smallQ) == 0 || !small && len(src.queue) == 0) && b.fitsMainLocked(src, n, time.Now()) {
		t := b.chargeLocked(src, n, false)
		b.mu.Unlock()
		return t, nil
	}
	now := time.Now()
	w := &waiter{n: n, small: small, src: src, ready: make(chan struct{})}
	src.refs++
	if small {
		if len(src.smallQ) == 0 {
			w.headSince = now
		}
		src.smallQ = append(src.smallQ, w)
	} else {
		if len(src.queue) == 0 {
			w.headSince = now
		}
		src.queue = append(src.queue, w)
	}
	b.refreshLocked(src)
	b.grantLocked(now)
	if w.granted {
		b.mu.Unlock()
		return w.t, nil
	}
	b.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return w.t, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-stop:
		err = errStopped
	case <-timer.C:
		err = errNotAdmitted
	}
	b.mu.Lock()
	if w.granted {
		// Granted while we were giving up: hand it back.
		b.mu.Unlock()
		w.t.release()
	} else {
		b.dropWaiterLocked(w, time.Now())
		b.grantLocked(time.Now())
		b.mu.Unlock()
	}
	return ticket{}, fmt.Errorf("waiting for %d bytes of the %s pool: %w", n, b.name, err)
}

// fitsReserveLocked reports whether a ticket of n bytes for src may be
// taken from the reserve now.
func (b *budget) fitsReserveLocked(src *source, n int64) bool {
	return n <= b.smallMax && b.reserveUsed+n <= b.reserve && src.small+n <= b.smallPerSource
}

// fitsMainLocked reports whether a ticket of n bytes for src may be taken
// from the main part now: within src's share, and leaving the room kept
// for an aged head of another source.
func (b *budget) fitsMainLocked(src *source, n int64, now time.Time) bool {
	if src.held+n > b.share {
		return false
	}
	keep := int64(0)
	if a := b.agedLocked(now); a != nil {
		keep = a.queue[0].n
	}
	return b.used+n+keep <= b.mainCap
}

// agedLocked returns the source whose large head has waited longest, if
// that is longer than aging (only sources within their share are in
// byAge).
func (b *budget) agedLocked(now time.Time) *source {
	s := b.byAge.top()
	if s == nil || now.Sub(s.queue[0].headSince) < b.aging {
		return nil
	}
	return s
}

// chargeLocked charges n bytes to src and returns the ticket.
func (b *budget) chargeLocked(src *source, n int64, reserve bool) ticket {
	if reserve {
		b.reserveUsed += n
		src.small += n
	} else {
		b.used += n
		src.held += n
	}
	if u := b.used + b.reserveUsed; u > b.peak {
		b.peak = u
	}
	b.total.add(n)
	src.refs++
	return ticket{b: b, src: src, n: n, reserve: reserve}
}

// put gives back n bytes of t; last means t is released, and with it its
// hold on its source.
func (b *budget) put(t *ticket, n int64, last bool) {
	b.mu.Lock()
	n = min(n, t.n)
	t.n -= n
	if t.reserve {
		b.reserveUsed -= n
		t.src.small -= n
	} else {
		b.used -= n
		t.src.held -= n
	}
	b.total.add(-n)
	s := t.src
	if len(s.queue) > 0 || len(s.smallQ) > 0 {
		b.refreshLocked(s) // it may be back within its share
	}
	if last {
		s.refs--
		b.forgetLocked(s)
	}
	if n > 0 && (b.byAge.len() > 0 || b.smallFirst != nil) {
		b.grantLocked(time.Now())
	}
	b.mu.Unlock()
}

// grantLocked grants what the waiting frames allow, in the order the type
// comment describes. Each step looks at the top of a heap or the front of
// the small list only, so a pass that grants nothing is O(1).
func (b *budget) grantLocked(now time.Time) {
	for {
		// Large heads: the longest waiting first if it fits; once it has
		// aged, room is kept for it; else the smallest that fits.
		var keep int64
		if s := b.byAge.top(); s != nil {
			h := s.queue[0]
			if b.used+h.n <= b.mainCap {
				b.grantLocked1(h, false, now)
				continue
			}
			if now.Sub(h.headSince) >= b.aging {
				keep = h.n
			}
		}
		if s := b.bySize.top(); s != nil && keep == 0 {
			if h := s.queue[0]; b.used+h.n <= b.mainCap {
				b.grantLocked1(h, false, now)
				continue
			}
		}
		if !b.grantSmallLocked(keep, now) {
			break
		}
	}
}

// grantSmallLocked grants the first small head it can, from the reserve
// or else from the main part (leaving keep), and reports whether it did.
// A source whose reserve allowance is spent is passed over; there are few
// of them (the reserve holds smallPerSource bytes only a few times over).
func (b *budget) grantSmallLocked(keep int64, now time.Time) bool {
	for s := b.smallFirst; s != nil; s = s.smallNext {
		h := s.smallQ[0]
		switch {
		case b.fitsReserveLocked(s, h.n):
			b.grantLocked1(h, true, now)
			return true
		case s.held+h.n <= b.share && b.used+h.n+keep <= b.mainCap:
			b.grantLocked1(h, false, now)
			return true
		case s.small+h.n > b.smallPerSource:
			continue // its allowance is spent: others may still fit
		}
		return false
	}
	return false
}

// grantLocked1 grants w, the head of its queue.
func (b *budget) grantLocked1(w *waiter, reserve bool, now time.Time) {
	w.t = b.chargeLocked(w.src, w.n, reserve)
	w.granted = true
	b.dropWaiterLocked(w, now)
	close(w.ready)
}

// dropWaiterLocked takes w out of its source's queue and updates where the
// source stands.
func (b *budget) dropWaiterLocked(w *waiter, now time.Time) {
	s := w.src
	q := &s.queue
	if w.small {
		q = &s.smallQ
	}
	wasHead := len(*q) > 0 && (*q)[0] == w
	*q = removeWaiter(*q, w)
	if wasHead && len(*q) > 0 {
		(*q)[0].headSince = now
	}
	s.refs--
	b.refreshLocked(s)
	b.forgetLocked(s)
}

// refreshLocked puts s in, or takes it out of, the heaps and the small
// list according to its queues and what it holds.
func (b *budget) refreshLocked(s *source) {
	if len(s.queue) > 0 && s.held+s.queue[0].n <= b.share {
		if s.ageIdx < 0 {
			b.byAge.push(s)
			b.bySize.push(s)
		} else {
			b.byAge.fix(s)
			b.bySize.fix(s)
		}
	} else if s.ageIdx >= 0 {
		b.byAge.remove(s)
		b.bySize.remove(s)
	}
	switch {
	case len(s.smallQ) > 0 && !s.inSmall:
		s.inSmall = true
		s.smallPrev = b.smallLast
		if b.smallLast != nil {
			b.smallLast.smallNext = s
		} else {
			b.smallFirst = s
		}
		b.smallLast = s
	case len(s.smallQ) == 0 && s.inSmall:
		s.inSmall = false
		if s.smallPrev != nil {
			s.smallPrev.smallNext = s.smallNext
		} else {
			b.smallFirst = s.smallNext
		}
		if s.smallNext != nil {
			s.smallNext.smallPrev = s.smallPrev
		} else {
			b.smallLast = s.smallPrev
		}
		s.smallPrev, s.smallNext = nil, nil
	}
}

// inUse reports the bytes currently charged.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used + b.reserveUsed
}

// highWater reports the most ever charged at once.
func (b *budget) highWater() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// sourceCount reports how many sources are known.
func (b *budget) sourceCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sources)
}

// waiting reports how many frames wait.
func (b *budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.sources {
		n += len(s.queue) + len(s.smallQ)
	}
	return n
}
