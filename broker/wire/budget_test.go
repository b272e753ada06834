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

// TestBudgetFIFO: a large waiter is not overtaken by a later small one
// that would fit.
func TestBudgetFIFO(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	first, _ := b.acquire(ctx, 90)

	order := make(chan int64, 2)
	go func() {
		n, _ := b.acquire(ctx, 95)
		order <- n
	}()
	waitFor(t, "large waiter queued", func() bool { return waiters(b) == 1 })
	go func() {
		n, _ := b.acquire(ctx, 10) // fits now, but must queue behind 80
		order <- n
	}()
	waitFor(t, "small waiter queued", func() bool { return waiters(b) == 2 })
	b.release(first)
	if n := <-order; n != 95 {
		t.Fatalf("first grant %d, want the 95 that queued first", n)
	}
	b.release(95)
	if n := <-order; n != 10 {
		t.Fatalf("second grant %d", n)
	}
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
