package wire

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBudgetAcquireRelease(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	n, err := b.acquire(ctx, 60, nil)
	if err != nil || n != 60 {
		t.Fatalf("acquire 60: %d %v", n, err)
	}
	if got := b.inUse(); got != 60 {
		t.Fatalf("in use %d", got)
	}

	// 50 does not fit: it waits until 60 is released.
	granted := make(chan int64)
	go func() {
		n, err := b.acquire(ctx, 50, nil)
		if err != nil {
			t.Error(err)
		}
		granted <- n
	}()
	select {
	case <-granted:
		t.Fatal("granted beyond capacity")
	case <-time.After(20 * time.Millisecond):
	}
	b.release(60, nil)
	if n := <-granted; n != 50 {
		t.Fatalf("granted %d", n)
	}
	b.release(50, nil)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d after releasing all", got)
	}
}

func TestBudgetClampsToCapacity(t *testing.T) {
	b := newBudget(100)
	n, err := b.acquire(context.Background(), 1000, nil)
	if err != nil || n != 100 {
		t.Fatalf("acquire 1000 from 100: %d %v", n, err)
	}
	b.release(n, nil)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d", got)
	}
}

// TestBudgetBypassThenOrder: a request that fits is not held up by an
// older one waiting for room, until that one has waited maxBypass: then a
// later small one queues behind it, so it is not starved.
func TestBudgetBypassThenOrder(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	first, _ := b.acquire(ctx, 90, nil)

	order := make(chan int64, 2)
	go func() {
		n, _ := b.acquire(ctx, 95, nil)
		order <- n
	}()
	waitFor(t, "large waiter queued", func() bool { return waiters(b) == 1 })
	// Fits now: granted at once, ahead of the 95.
	if n, err := b.acquire(ctx, 10, nil); err != nil || n != 10 {
		t.Fatalf("a request that fits waited behind a larger one: %d %v", n, err)
	}
	b.release(10, nil)
	time.Sleep(maxBypass + 10*time.Millisecond)
	go func() {
		n, _ := b.acquire(ctx, 10, nil) // fits, but the 95 has waited long enough
		order <- n
	}()
	waitFor(t, "small waiter queued", func() bool { return waiters(b) == 2 })
	b.release(first, nil)
	if n := <-order; n != 95 {
		t.Fatalf("first grant %d, want the 95 that waited past maxBypass", n)
	}
	b.release(95, nil)
	if n := <-order; n != 10 {
		t.Fatalf("second grant %d", n)
	}
	b.release(10, nil)
}

func TestBudgetCancel(t *testing.T) {
	b := newBudget(100)
	held, _ := b.acquire(context.Background(), 100, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := b.acquire(ctx, 10, nil)
		errc <- err
	}()
	waitFor(t, "waiter queued", func() bool { return waiters(b) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	b.release(held, nil)
	if got, w := b.inUse(), waiters(b); got != 0 || w != 0 {
		t.Fatalf("in use %d, waiters %d", got, w)
	}
}

func waiters(b *budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// TestBudgetSourceCaps: one address holds at most its cap (a larger
// frame alone), the budget still counts every byte, a waiter its own
// address keeps out holds up nobody else, and an address is forgotten
// once nothing of it is left.
func TestBudgetSourceCaps(t *testing.T) {
	b := newBudget(100).withSourceCaps(30, 30)
	ctx := context.Background()
	a1, a2, other := b.owner("a"), b.owner("a"), b.owner("b")
	if n, err := b.acquire(ctx, 50, a1); err != nil || n != 50 {
		t.Fatalf("a frame over the source cap: %d %v", n, err)
	}
	if b.inUse() != 50 {
		t.Fatalf("the budget counts %d, want the whole 50", b.inUse())
	}
	// The address is at its cap: a second connection of it waits...
	got := make(chan int64, 1)
	go func() { n, _ := b.acquire(ctx, 10, a2); got <- n }()
	waitFor(t, "same-address waiter", func() bool { return waiters(b) == 1 })
	// ...long enough to be old, and still holds up no other address.
	time.Sleep(maxBypass + 10*time.Millisecond)
	if n, err := b.acquire(ctx, 40, other); err != nil || n != 40 {
		t.Fatalf("another address waited behind a capped one: %d %v", n, err)
	}
	b.release(50, a1)
	if n := <-got; n != 10 {
		t.Fatalf("granted %d", n)
	}
	b.release(10, a2)
	b.release(40, other)
	b.closeOwner(a1)
	b.closeOwner(a2)
	b.closeOwner(other)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used != 0 || len(b.addrs) != 0 {
		t.Fatalf("in use %d, addresses %v after everything was released", b.used, b.addrs)
	}
}
