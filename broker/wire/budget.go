package wire

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// budget admits request frames against the in-flight memory budget. A
// frame is granted one ticket for everything it may need (see ticketBytes)
// before its buffer is allocated, or it waits holding nothing.
//
// The budget is split in two pools. The reserve (an eighth) is for small
// frames only, up to an allowance per source, and never waits behind
// anything: Metadata, Heartbeat and ApiVersions keep being answered
// whatever large frames do. The main pool takes every frame; a frame
// that does not fit waits in its source's FIFO queue. Sources with
// waiters take turns (round-robin, one grant per source per pass), and a
// head that does not fit is skipped, so one source's waiting giant never
// holds back another's frame that fits. Under contention a source that
// already holds half the main pool gets no more until others are served.
// A head that has waited longer than aging goes first, and room is kept
// for it until it fits, so large frames are not starved by small ones.
type budget struct {
	mu sync.Mutex

	capacity       int64 // mainCap + reserve
	mainCap        int64
	reserve        int64
	smallPerSource int64 // reserve bytes one source may hold
	smallMax       int64 // largest ticket that may use the reserve
	aging          time.Duration
	maxConns       int // per source; 0 is no limit

	used        int64 // main pool
	reserveUsed int64
	peak        int64 // high-water mark of used+reserveUsed, for tests

	sources map[sourceKey]*source
	// ring holds the sources with waiters, circularly linked; cursor is
	// where the next round-robin pass starts.
	cursor  *source
	ringLen int
}

// Admission tuning.
const (
	// reserveShare: the reserve is capacity/reserveShare.
	reserveShare = 8
	// maxSmallPerSource caps one source's reserve allowance.
	maxSmallPerSource = 4 << 20
	// defaultAging is how long a head waits before room is kept for it.
	defaultAging = time.Second
)

// waiter is a frame waiting for its ticket.
type waiter struct {
	n       int64 // main-pool charge, clamped to mainCap
	want    int64 // unclamped, for the reserve
	src     *source
	since   time.Time
	ready   chan struct{} // closed once granted
	granted bool
	t       ticket
}

func newBudget(capacity int64) *budget {
	capacity = max(capacity, 1)
	reserve := capacity / reserveShare
	per := min(reserve/4, maxSmallPerSource)
	return &budget{
		capacity:       capacity,
		mainCap:        capacity - reserve,
		reserve:        reserve,
		smallPerSource: per,
		smallMax:       per / 4,
		aging:          defaultAging,
		sources:        make(map[sourceKey]*source),
	}
}

// newBudgetFor returns the budget cfg (with defaults applied) asks for.
func newBudgetFor(cfg Config) *budget {
	b := newBudget(cfg.MaxInFlightBytes)
	b.maxConns = cfg.MaxConnsPerIP
	return b
}

// openConn counts a new connection from key and returns its source, or
// an error if the source already has maxConns connections.
func (b *budget) openConn(key sourceKey) (*source, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sources[key]
	if s == nil {
		s = &source{key: key}
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

// acquire returns a ticket for a frame of src charged n bytes. It waits
// until the ticket is granted, ctx is done, stop is closed or deadline
// passes; a frame larger than the main pool is charged the whole pool, so
// it can still proceed alone.
func (b *budget) acquire(ctx context.Context, stop <-chan struct{}, src *source, n int64, deadline time.Time) (ticket, error) {
	n = max(n, 0)
	b.mu.Lock()
	if b.fitsReserveLocked(src, n) {
		t := b.chargeLocked(src, n, true)
		b.mu.Unlock()
		return t, nil
	}
	clamped := min(n, b.mainCap)
	if b.ringLen == 0 && b.used+clamped <= b.mainCap {
		t := b.chargeLocked(src, clamped, false)
		b.mu.Unlock()
		return t, nil
	}
	now := time.Now()
	w := &waiter{n: clamped, want: n, src: src, since: now, ready: make(chan struct{})}
	src.refs++
	src.push(w)
	b.ringAddLocked(src)
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
		b.dropWaiterLocked(w)
		b.grantLocked(time.Now())
		b.mu.Unlock()
	}
	return ticket{}, fmt.Errorf("waiting for %d bytes of in-flight budget: %w", n, err)
}

// fitsReserveLocked reports whether a ticket of n bytes for src may be
// taken from the reserve now.
func (b *budget) fitsReserveLocked(src *source, n int64) bool {
	return n <= b.smallMax && b.reserveUsed+n <= b.reserve && src.small+n <= b.smallPerSource
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
	if last {
		t.src.refs--
		b.forgetLocked(t.src)
	}
	if b.ringLen > 0 {
		b.grantLocked(time.Now())
	}
	b.mu.Unlock()
}

// grantLocked grants what the waiting frames allow, in the order the type
// comment describes.
func (b *budget) grantLocked(now time.Time) {
	for b.ringLen > 0 {
		aged := b.agedHeadLocked(now)
		var keep int64
		if aged != nil {
			if b.tryGrantLocked(aged, 0) {
				continue
			}
			keep = aged.n
		}
		if !b.passLocked(aged, keep) {
			return
		}
	}
}

// agedHeadLocked returns the head that has waited longest, if it has
// waited longer than aging.
func (b *budget) agedHeadLocked(now time.Time) *waiter {
	var oldest *waiter
	s := b.cursor
	for range b.ringLen {
		if h := s.head(); oldest == nil || h.since.Before(oldest.since) {
			oldest = h
		}
		s = s.next
	}
	if oldest == nil || now.Sub(oldest.since) < b.aging {
		return nil
	}
	return oldest
}

// passLocked offers the next turn to every source with waiters once,
// starting at the cursor, and reports whether it granted anything. skip
// is the aged head (served on its own) and keep the room kept for it.
func (b *budget) passLocked(skip *waiter, keep int64) bool {
	granted := false
	s := b.cursor
	for range b.ringLen {
		next := s.next
		if b.grantSmallLocked(s) && b.ringLen == 0 {
			return true
		}
		if !s.inRing {
			s = next
			continue
		}
		h := s.head()
		if h != skip && !b.overShareLocked(s, h) && b.tryGrantLocked(h, keep) {
			granted = true
			if b.ringLen == 0 {
				return true
			}
			b.cursor = next
		}
		s = next
	}
	return granted
}

// grantSmallLocked grants s's waiters that fit the reserve, wherever they
// are in its queue: the reserve is not what the frames before them wait
// for, so they delay nothing. It reports whether it granted any.
func (b *budget) grantSmallLocked(s *source) bool {
	if b.reserveUsed >= b.reserve {
		return false
	}
	granted := false
	for i := 0; i < len(s.queue); {
		w := s.queue[i]
		if !b.fitsReserveLocked(s, w.want) {
			i++
			continue
		}
		b.tryGrantLocked(w, 0) // removes w from the queue
		granted = true
	}
	return granted
}

// overShareLocked: under contention, a source that holds main-pool bytes
// waits for others before it holds more than half the main pool.
func (b *budget) overShareLocked(s *source, w *waiter) bool {
	return b.ringLen > 1 && s.held > 0 && s.held+w.n > b.mainCap/2
}

// tryGrantLocked grants w, the head of its source, if it fits with keep
// bytes of the main pool left over.
func (b *budget) tryGrantLocked(w *waiter, keep int64) bool {
	switch {
	case b.fitsReserveLocked(w.src, w.want):
		w.t = b.chargeLocked(w.src, w.want, true)
	case b.used+w.n+keep <= b.mainCap:
		w.t = b.chargeLocked(w.src, w.n, false)
	default:
		return false
	}
	w.granted = true
	b.dropWaiterLocked(w)
	close(w.ready)
	return true
}

// dropWaiterLocked takes w out of its source's queue, and the source out
// of the ring once its queue is empty.
func (b *budget) dropWaiterLocked(w *waiter) {
	s := w.src
	s.remove(w)
	s.refs--
	if len(s.queue) == 0 {
		b.ringRemoveLocked(s)
	}
	b.forgetLocked(s)
}

func (b *budget) ringAddLocked(s *source) {
	if s.inRing {
		return
	}
	s.inRing = true
	b.ringLen++
	if b.cursor == nil {
		s.prev, s.next = s, s
		b.cursor = s
		return
	}
	// Just before the cursor: last in the current round.
	s.prev, s.next = b.cursor.prev, b.cursor
	s.prev.next, s.next.prev = s, s
}

func (b *budget) ringRemoveLocked(s *source) {
	if !s.inRing {
		return
	}
	s.inRing = false
	b.ringLen--
	if b.ringLen == 0 {
		b.cursor = nil
	} else {
		if b.cursor == s {
			b.cursor = s.next
		}
		s.prev.next, s.next.prev = s.next, s.prev
	}
	s.prev, s.next = nil, nil
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
