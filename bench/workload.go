package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A Workload is one named measurement. Run gets the seed address(es) of a
// running broker (comma-separated) and measures against it. Later
// workloads (replication, processors) are new entries in registry.
type Workload interface {
	Name() string
	Run(ctx context.Context, addr string) (Result, error)
}

// Result is what one run of a workload measured. A phase that a workload
// does not have is left zero.
type Result struct {
	Produce Phase `json:"produce"`
	Consume Phase `json:"consume"`
	// OpenLoop is set by the open-loop workload (-rate) instead.
	OpenLoop *OpenLoop `json:"open_loop,omitempty"`
}

// Phase is one timed phase: how many records and value bytes moved, in how
// long, and (for produce) the per-record latency distribution.
type Phase struct {
	Records int64         `json:"records"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	P50     time.Duration `json:"p50_ns,omitempty"`
	P99     time.Duration `json:"p99_ns,omitempty"`
	Max     time.Duration `json:"max_ns,omitempty"`
	// Requests are the phase's produce or fetch requests.
	Requests Requests `json:"requests"`
	// ServerCPU is the server process's CPU time during the phase, when
	// the server runs in a process of its own (0 otherwise).
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
}

// ServerCPUPerGiB is the server's CPU seconds per GiB of record values
// moved, or 0 when unknown.
func (p Phase) ServerCPUPerGiB() float64 {
	if p.ServerCPU <= 0 || p.Bytes <= 0 {
		return 0
	}
	return p.ServerCPU.Seconds() / (float64(p.Bytes) / (1 << 30))
}

// RecordsPerSec is the phase's throughput in records.
func (p Phase) RecordsPerSec() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Records) / p.Elapsed.Seconds()
}

// MiBPerSec is the phase's throughput in value bytes (MiB = 2^20 bytes).
func (p Phase) MiBPerSec() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bytes) / (1 << 20) / p.Elapsed.Seconds()
}

// registry lists every workload, in the order they run.
func registry(o Options) []Workload {
	return []Workload{
		&produceConsume{name: "produce-1k", valueSize: 1024, opts: o},
		&produceConsume{name: "produce-100b", valueSize: 100, opts: o},
	}
}

func workloadNames() []string {
	var names []string
	for _, w := range registry(Options{}) {
		names = append(names, w.Name())
	}
	return names
}

// selectWorkloads returns the workloads named by -workloads, in registry
// order, or all of them.
func selectWorkloads(o Options) ([]Workload, error) {
	if o.Rate > 0 {
		return []Workload{&openLoop{valueSize: o.ValueSize, opts: o}}, nil
	}
	all := registry(o)
	if strings.TrimSpace(o.Workloads) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(o.Workloads, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var out []Workload
	for _, w := range all {
		if want[w.Name()] {
			out = append(out, w)
			delete(want, w.Name())
		}
	}
	for n := range want {
		return nil, fmt.Errorf("unknown workload %q (have %s)", n, strings.Join(workloadNames(), ", "))
	}
	return out, nil
}
