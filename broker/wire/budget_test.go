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
	n, err := b.acquire(ctx, 60)
	if err != nil || n != 60 {
		t.Fatalf("acquire 60: %d %v", n, err)
	}
	if got := b.inUse(); got != 60 {
		t.Fatalf("in use %d", got)
	}

	// 50 does not fit: it waits until 60 is released.
	granted := make(chan int64)
	go func() {
		n, err := b.acquire(ctx, 50)
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
	b.release(60)
	if n := <-granted; n != 50 {
		t.Fatalf("granted %d", n)
	}
	b.release(50)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d after releasing all", got)
	}
}

func TestBudgetClampsToCapacity(t *testing.T) {
	b := newBudget(100)
	n, err := b.acquire(context.Background(), 1000)
	if err != nil || n != 100 {
		t.Fatalf("acquire 1000 from 100: %d %v", n, err)
	}
	b.release(n)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d", got)
	}
}

// TestBudgetBypassThenOrder: a request that fits is not held up by an
// older one waiting for room, until that one has waited maxBypass: then a
// later one larger than smallCharge queues behind it, so it is not
// starved.
func TestBudgetBypassThenOrder(t *testing.T) {
	const u = smallCharge
	b := newBudget(100 * u)
	ctx := context.Background()
	first, _ := b.acquire(ctx, 90*u)

	order := make(chan int64, 2)
	go func() {
		n, _ := b.acquire(ctx, 95*u)
		order <- n
	}()
	waitFor(t, "large waiter queued", func() bool { return waiters(b) == 1 })
	// Fits now: granted at once, ahead of the 95.
	if n, err := b.acquire(ctx, 10*u); err != nil || n != 10*u {
		t.Fatalf("a request that fits waited behind a larger one: %d %v", n, err)
	}
	b.release(10 * u)
	time.Sleep(maxBypass + 10*time.Millisecond)
	go func() {
		n, _ := b.acquire(ctx, 10*u) // fits, but the 95 has waited long enough
		order <- n
	}()
	waitFor(t, "small waiter queued", func() bool { return waiters(b) == 2 })
	b.release(first)
	if n := <-order; n != 95*u {
		t.Fatalf("first grant %d, want the 95 that waited past maxBypass", n)
	}
	b.release(95 * u)
	if n := <-order; n != 10*u {
		t.Fatalf("second grant %d", n)
	}
	b.release(10 * u)
}

func TestBudgetCancel(t *testing.T) {
	b := newBudget(100)
	held, _ := b.acquire(context.Background(), 100)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := b.acquire(ctx, 10)
		errc <- err
	}()
	waitFor(t, "waiter queued", func() bool { return waiters(b) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	b.release(held)
	if got, w := b.inUse(), waiters(b); got != 0 || w != 0 {
		t.Fatalf("in use %d, waiters %d", got, w)
	}
}

func waiters(b *budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// TestBudgetSmallPassesInOrder: once grants go in order behind an old
// large waiter, a small request that fits still goes ahead.
func TestBudgetSmallPassesInOrder(t *testing.T) {
	b := newBudget(4 * smallCharge)
	ctx := context.Background()
	held, _ := b.acquire(ctx, 2*smallCharge)
	go func() { _, _ = b.acquire(ctx, 3*smallCharge) }()
	waitFor(t, "large waiter queued", func() bool { return waiters(b) == 1 })
	time.Sleep(maxBypass + 10*time.Millisecond)
	done := make(chan int64, 1)
	go func() { n, _ := b.acquire(ctx, smallCharge); done <- n }()
	select {
	case n := <-done:
		b.release(n)
	case <-time.After(time.Second):
		t.Fatal("a small request that fits waited behind an old large one")
	}
	// A larger one that fits does wait, so the large waiter is not
	// starved.
	go func() { n, _ := b.acquire(ctx, smallCharge+1); done <- n }()
	waitFor(t, "medium waiter queued", func() bool { return waiters(b) == 2 })
	b.release(held)
	// The large one goes first; the medium one still waits for it.
	waitFor(t, "large granted", func() bool { return waiters(b) == 1 && b.inUse() == 3*smallCharge })
}
