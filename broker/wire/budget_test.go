package wire

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// farAway is a deadline the unit tests never reach.
var farAway = time.Now().Add(time.Hour)

// testSource opens a connection's worth of source on b.
func testSource(t testing.TB, b *budget, addr string) *source {
	t.Helper()
	s, err := b.openConn(sourceKey{prefix: netip.MustParsePrefix(addr + "/32")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// acquireAsync acquires in a goroutine; the result arrives on the channel.
func acquireAsync(b *budget, src *source, n int64, deadline time.Time) <-chan ticketResult {
	ch := make(chan ticketResult, 1)
	go func() {
		t, err := b.acquire(context.Background(), nil, src, n, deadline)
		ch <- ticketResult{t, err}
	}()
	return ch
}

type ticketResult struct {
	t   ticket
	err error
}

func mustAcquire(t testing.TB, b *budget, src *source, n int64) ticket {
	t.Helper()
	tk, err := b.acquire(context.Background(), nil, src, n, farAway)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func releaseTicket(tk ticket) { tk.release() }

func waitersOf(b *budget, s *source) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(s.queue)
}

func expectPending(t *testing.T, ch <-chan ticketResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: granted %d (err %v), want it waiting", what, r.t.n, r.err)
	case <-time.After(20 * time.Millisecond):
	}
}

func expectGranted(t *testing.T, ch <-chan ticketResult, what string) ticket {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.t
	case <-time.After(ioTimeout):
		t.Fatalf("%s: not granted", what)
	}
	return ticket{}
}

// newTestBudget has a main pool of 1000 bytes and no reserve, so that the
// arithmetic of the tests is plain.
func newTestBudget() *budget {
	b := newBudget(1000)
	b.mainCap, b.reserve, b.smallPerSource, b.smallMax = 1000, 0, 0, 0
	return b
}

func TestBudgetAcquireRelease(t *testing.T) {
	b := newTestBudget()
	a := testSource(t, b, "10.0.0.1")
	first := mustAcquire(t, b, a, 600)
	if got := b.inUse(); got != 600 {
		t.Fatalf("in use %d", got)
	}
	ch := acquireAsync(b, a, 500, farAway)
	expectPending(t, ch, "500 beyond the budget")
	first.release()
	second := expectGranted(t, ch, "500 after release")
	second.shrink(100)
	if got := b.inUse(); got != 100 {
		t.Fatalf("in use %d after shrinking to 100", got)
	}
	second.release()
	second.release() // a second release does nothing
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d after releasing all", got)
	}
	b.closeConn(a)
	if n := b.sourceCount(); n != 0 {
		t.Fatalf("%d sources left", n)
	}
}

// TestBudgetRefusesOversized: a ticket larger than a source's share is
// refused, not clamped (it would hold more memory than it is charged).
func TestBudgetRefusesOversized(t *testing.T) {
	b := newTestBudget()
	b.share = 500
	a := testSource(t, b, "10.0.0.1")
	if _, err := b.acquire(context.Background(), nil, a, 501, farAway); !errors.Is(err, errTooLarge) {
		t.Fatalf("501 bytes with a share of 500: %v", err)
	}
	tk := mustAcquire(t, b, a, 500)
	tk.release()
}

// TestBudgetFIFOWithinSource: a source's large waiter is not overtaken by
// its own later frame that would fit.
func TestBudgetFIFOWithinSource(t *testing.T) {
	b := newTestBudget()
	a := testSource(t, b, "10.0.0.1")
	held := mustAcquire(t, b, a, 900)
	big := acquireAsync(b, a, 950, farAway)
	waitFor(t, "large waiter", func() bool { return waitersOf(b, a) == 1 })
	small := acquireAsync(b, a, 60, farAway)
	waitFor(t, "small waiter", func() bool { return waitersOf(b, a) == 2 })
	expectPending(t, small, "small behind its own source's large frame")
	held.release()
	tk := expectGranted(t, big, "large")
	expectPending(t, small, "60 while the large one holds 950")
	tk.release()
	releaseTicket(expectGranted(t, small, "small"))
}

// TestBudgetOtherSourcePassesWaitingGiant: a waiting frame of one source
// does not hold back another source's frame that fits.
func TestBudgetOtherSourcePassesWaitingGiant(t *testing.T) {
	b := newTestBudget()
	a, c := testSource(t, b, "10.0.0.1"), testSource(t, b, "10.0.0.2")
	held := mustAcquire(t, b, a, 400)
	giant := acquireAsync(b, a, 900, farAway)
	waitFor(t, "giant waiting", func() bool { return waitersOf(b, a) == 1 })
	// c's frame fits next to what a holds: granted at once.
	tk := mustAcquire(t, b, c, 300)
	tk.release()
	held.release()
	releaseTicket(expectGranted(t, giant, "giant"))
}

// TestBudgetAging: a head that has waited past aging gets room kept, so a
// stream of frames that fit cannot starve it.
func TestBudgetAging(t *testing.T) {
	b := newTestBudget()
	b.aging = 30 * time.Millisecond
	a, c := testSource(t, b, "10.0.0.1"), testSource(t, b, "10.0.0.2")
	held := mustAcquire(t, b, c, 300)
	giant := acquireAsync(b, a, 900, farAway)
	waitFor(t, "giant waiting", func() bool { return waitersOf(b, a) == 1 })
	// Before aging, c may still take what fits.
	early := mustAcquire(t, b, c, 100)
	time.Sleep(2 * b.aging)
	// Aged: c's next frame waits, though it fits the free 600 bytes.
	late := acquireAsync(b, c, 100, farAway)
	expectPending(t, late, "frame after the giant aged")
	held.release()
	early.release()
	g := expectGranted(t, giant, "aged giant")
	g.release()
	releaseTicket(expectGranted(t, late, "frame behind the aged giant"))
}

// TestBudgetRoundRobin: sources take turns; one with many waiters does not
// get all the freed room.
func TestBudgetRoundRobin(t *testing.T) {
	b := newTestBudget()
	a, c := testSource(t, b, "10.0.0.1"), testSource(t, b, "10.0.0.2")
	held := mustAcquire(t, b, a, 1000)
	var fromA []<-chan ticketResult
	for range 3 {
		fromA = append(fromA, acquireAsync(b, a, 400, farAway))
		waitFor(t, "a waiting", func() bool { return waitersOf(b, a) == len(fromA) })
	}
	fromC := acquireAsync(b, c, 400, farAway)
	waitFor(t, "c waiting", func() bool { return waitersOf(b, c) == 1 })
	held.release()
	// 1000 bytes free: one turn each, a then c (or c then a).
	releaseTicket(expectGranted(t, fromC, "c's turn"))
	var got int
	for _, ch := range fromA {
		select {
		case r := <-ch:
			r.t.release()
			got++
		case <-time.After(ioTimeout):
		}
	}
	if got != 3 {
		t.Fatalf("%d of a's frames granted", got)
	}
}

// TestBudgetReserve: small frames are admitted from the reserve while the
// main pool is full, up to each source's allowance.
func TestBudgetReserve(t *testing.T) {
	b := newBudget(64<<20).withReserve(8<<20, 512<<10) // 2 MiB per source
	a, c := testSource(t, b, "10.0.0.1"), testSource(t, b, "10.0.0.2")
	full := mustAcquire(t, b, a, b.mainCap)
	waiting := acquireAsync(b, a, b.mainCap, farAway)
	waitFor(t, "large waiter", func() bool { return waitersOf(b, a) == 1 })

	var small []ticket
	for range 4 {
		small = append(small, mustAcquire(t, b, a, b.smallMax))
	}
	// a's allowance is spent: its next small frame waits...
	next := acquireAsync(b, a, b.smallMax, farAway)
	expectPending(t, next, "small frame beyond the allowance")
	// ...but c's does not.
	releaseTicket(mustAcquire(t, b, c, b.smallMax))
	if hw := b.highWater(); hw > b.capacity {
		t.Fatalf("high water %d above capacity %d", hw, b.capacity)
	}
	small[0].release()
	releaseTicket(expectGranted(t, next, "small frame once the allowance has room"))
	for _, tk := range small[1:] {
		tk.release()
	}
	full.release()
	releaseTicket(expectGranted(t, waiting, "large"))
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d", got)
	}
}

func TestBudgetCancelAndDeadline(t *testing.T) {
	b := newTestBudget()
	a := testSource(t, b, "10.0.0.1")
	c := testSource(t, b, "10.0.0.2")
	held := mustAcquire(t, b, a, 1000)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.acquire(ctx, nil, c, 10, farAway)
		errc <- err
	}()
	waitFor(t, "waiter queued", func() bool { return waitersOf(b, c) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}

	start := time.Now()
	_, err := b.acquire(context.Background(), nil, c, 10, time.Now().Add(30*time.Millisecond))
	if !errors.Is(err, errNotAdmitted) {
		t.Fatalf("err = %v, want errNotAdmitted", err)
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > time.Second {
		t.Fatalf("deadline wait took %v", took)
	}

	stop := make(chan struct{})
	close(stop)
	if _, err := b.acquire(context.Background(), stop, c, 10, farAway); !errors.Is(err, errStopped) {
		t.Fatalf("err = %v, want errStopped", err)
	}
	held.release()
	b.closeConn(a)
	b.closeConn(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used != 0 || b.byAge.len() != 0 || b.bySize.len() != 0 || b.smallFirst != nil || len(b.sources) != 0 {
		t.Fatalf("used %d, heads %d/%d, sources %d", b.used, b.byAge.len(), b.bySize.len(), len(b.sources))
	}
}

func TestBudgetConnLimit(t *testing.T) {
	b := newTestBudget()
	b.maxConns = 2
	key := sourceKey{prefix: netip.MustParsePrefix("10.0.0.1/32")}
	s1, _ := b.openConn(key)
	s2, _ := b.openConn(key)
	if _, err := b.openConn(key); !errors.Is(err, errTooManyConns) {
		t.Fatalf("third connection: %v", err)
	}
	other, err := b.openConn(sourceKey{prefix: netip.MustParsePrefix("10.0.0.2/32")})
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	b.closeConn(s1)
	s3, err := b.openConn(key)
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	for _, s := range []*source{s2, s3, other} {
		b.closeConn(s)
	}
	if n := b.sourceCount(); n != 0 {
		t.Fatalf("%d sources left", n)
	}
}

func TestSourceKey(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	same := [][2]string{
		{"[2001:db8:1:2:aaaa::1]:1000", "[2001:db8:1:2:bbbb::9]:2000"}, // one /64
		{"[::ffff:10.1.2.3]:1", "10.1.2.3:2"},                          // IPv4-mapped
	}
	for _, p := range same {
		if a, b := sourceKeyOf(tcp(p[0])), sourceKeyOf(tcp(p[1])); a != b {
			t.Errorf("%s and %s: keys %v and %v differ", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1"},
		{"10.1.2.3:1", "10.1.2.4:1"},
	}
	for _, p := range differ {
		if a, b := sourceKeyOf(tcp(p[0])), sourceKeyOf(tcp(p[1])); a == b {
			t.Errorf("%s and %s share key %v", p[0], p[1], a)
		}
	}
	if got := sourceKeyOf(tcp("[2001:db8:1:2:aaaa::1]:1")).String(); got != "2001:db8:1:2::/64" {
		t.Errorf("IPv6 key %q", got)
	}
}

// TestBudgetStress: many sources acquiring, shrinking and releasing at
// random never charge more than the capacity and end at zero.
func TestBudgetStress(t *testing.T) {
	b := newBudget(1 << 20)
	b.aging = time.Millisecond
	var wg sync.WaitGroup
	for i := range 8 {
		src := testSource(t, b, netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}).String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 300 {
				n := int64((j*7919+i*104729)%(600<<10) + 1)
				tk, err := b.acquire(context.Background(), nil, src, n, time.Now().Add(ioTimeout))
				if err != nil {
					t.Error(err)
					return
				}
				tk.shrink(n / 2)
				tk.release()
			}
			b.closeConn(src)
		}()
	}
	wg.Wait()
	if hw := b.highWater(); hw > b.capacity {
		t.Fatalf("high water %d above capacity %d", hw, b.capacity)
	}
	if u, n := b.inUse(), b.sourceCount(); u != 0 || n != 0 {
		t.Fatalf("in use %d, %d sources", u, n)
	}
}
