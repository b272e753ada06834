package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// watchdog cancels ctx when progress stops moving for stall: a broker that
// keeps rejecting batches makes franz-go retry forever, and a benchmark
// should say so quickly instead of waiting for -timeout. It returns once
// ctx is done.
func watchdog(ctx context.Context, cancel context.CancelCauseFunc, progress *atomic.Int64, stall time.Duration) {
	if stall <= 0 {
		return
	}
	tick := time.NewTicker(stall / 10)
	defer tick.Stop()
	last, since := progress.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if p := progress.Load(); p != last {
				last, since = p, now
			} else if now.Sub(since) >= stall {
				cancel(fmt.Errorf("no record acknowledged for %s after %d (rerun with -v to see the client's log)", stall, p))
				return
			}
		}
	}
}
