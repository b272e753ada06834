package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// Run is one measured run of one workload against one target.
type Run struct {
	Workload string `json:"workload"`
	Target   string `json:"target"`
	N        int    `json:"run"`
	Result
}

// runAll runs every workload against every target, -count times. Targets
// alternate within each repetition so that brokerd and its peer are
// measured close together in time. Each run gets a fresh broker.
func runAll(ctx context.Context, o Options, ws []Workload, ts []Target) ([]Run, error) {
	var runs []Run
	for i := 1; i <= o.Count; i++ {
		for _, w := range ws {
			for _, t := range ts {
				if !o.JSON {
					fmt.Fprintf(os.Stderr, "run %d/%d %-14s %-8s ...", i, o.Count, w.Name(), t.Name())
				}
				res, err := runOne(ctx, o, w, t)
				if err != nil {
					if !o.JSON {
						fmt.Fprintln(os.Stderr, " failed")
					}
					return runs, fmt.Errorf("run %d of %s on %s: %w", i, w.Name(), t.Name(), err)
				}
				switch {
				case o.JSON:
				case res.OpenLoop != nil:
					fmt.Fprintf(os.Stderr, " ack p99 %s, end-to-end p99 %s\n", res.OpenLoop.Ack.P99, res.OpenLoop.E2E.P99)
				default:
					fmt.Fprintf(os.Stderr, " %.0f records/s produce, %.0f records/s consume\n",
						res.Produce.RecordsPerSec(), res.Consume.RecordsPerSec())
				}
				runs = append(runs, Run{Workload: w.Name(), Target: t.Name(), N: i, Result: res})
			}
		}
	}
	return runs, nil
}

// runOne starts the target, runs the workload, and stops the target. The
// broker's goroutines and the clients' goroutines carry different pprof
// labels (inherited by every goroutine they start).
func runOne(ctx context.Context, o Options, w Workload, t Target) (res Result, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// Start every run from the same heap state: the previous run's broker
	// and its records are garbage by now.
	runtime.GC()
	var srv Server
	pprof.Do(ctx, pprof.Labels("bench", t.Name()+"/server"), func(ctx context.Context) {
		srv, err = t.Start(ctx)
	})
	if err != nil {
		return res, err
	}
	defer func() {
		done := make(chan struct{})
		go func() { srv.Stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			fmt.Fprintf(os.Stderr, "bench: %s did not stop within 30s; continuing\n", t.Name())
		}
	}()
	ctx = withServerCPU(ctx, srv.CPU)
	pprof.Do(ctx, pprof.Labels("bench", t.Name()+"/client"), func(ctx context.Context) {
		res, err = w.Run(ctx, srv.Addr)
	})
	return res, err
}
