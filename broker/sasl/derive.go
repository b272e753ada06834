package sasl

import (
	"runtime"
	"time"
)

// PLAIN costs the server a key derivation (PBKDF2, 4096 to 16384 HMACs)
// per attempt, which unauthenticated clients can ask for as fast as they
// can connect. At most one derivation per CPU runs at once; an attempt
// waits up to maxDeriveWait for its turn, then fails, so that a flood of
// PLAIN attempts leaves the other CPUs' worth of work to the broker and
// waits, on its connections' goroutines, for a bounded time.
const maxDeriveWait = 5 * time.Second

// deriveLimit is a semaphore on key derivations.
type deriveLimit struct {
	slots chan struct{}
	wait  time.Duration
}

func newDeriveLimit() *deriveLimit {
	return &deriveLimit{slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)), wait: maxDeriveWait}
}

// acquire takes a slot, or fails after maxDeriveWait.
func (d *deriveLimit) acquire() error {
	select {
	case d.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(d.wait)
	defer t.Stop()
	select {
	case d.slots <- struct{}{}:
		return nil
	case <-t.C:
		return failed("server busy with other key derivations")
	}
}

// release gives a slot back.
func (d *deriveLimit) release() { <-d.slots }
