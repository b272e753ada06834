package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

func printHeader(w io.Writer, m Machine, o Options) {
	fmt.Fprintf(w, "brokerd bench  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "machine: nproc=%d GOMAXPROCS=%d %s %s kernel=%s cpu=%q loadavg=%s\n",
		m.NumCPU, m.GOMAXPROCS, m.GoVersion, m.OS, m.Kernel, m.CPU, m.LoadAvg)
	var mods []string
	for p, v := range m.Modules {
		mods = append(mods, p+"@"+v)
	}
	sort.Strings(mods)
	if len(mods) > 0 {
		fmt.Fprintf(w, "modules: %s\n", strings.Join(mods, " "))
	}
	size := fmt.Sprintf("duration=%s", o.Duration)
	if o.Records > 0 {
		size = fmt.Sprintf("records=%d", o.Records)
	}
	fmt.Fprintf(w, "config:  %s count=%d partitions=%d replication=%d acks=all idempotent linger=%s inflight=%d compression=%s\n",
		size, o.Count, o.Partitions, o.Replication, o.Linger, o.Inflight, o.Compression)
	if o.MaxProduceV >= 0 {
		fmt.Fprintf(w, "         Produce capped at v%d\n", o.MaxProduceV)
	}
	fmt.Fprintln(w, "units:   MiB/s of record values; latency = Produce call to promise, per record;")
	fmt.Fprintln(w, "         pCPU/cCPU s/G = the server process's CPU seconds per GiB produced / served")
	fmt.Fprintln(w)
}

const (
	rowHead = "%-14s %-16s %4s %11s %9s %8s %8s %11s %9s %9s %9s\n"
	rowNums = "%-14s %-16s %4s %11.0f %9.1f %8.2f %8.2f %11.0f %9.1f %9.2f %9.2f\n"
	rowRate = "%-14s %-16s %4s %11.2f %9.2f %8.2f %8.2f %11.2f %9.2f %9.2f %9.2f\n"
)

func printColumns(w io.Writer) {
	fmt.Fprintf(w, rowHead, "workload", "target", "run", "prod rec/s", "prod MiB/s", "p50 ms", "p99 ms", "cons rec/s", "cons MiB/s", "pCPU s/G", "cCPU s/G")
}

// printTables prints every run, then the medians with a ratio row of the
// measured target over kfake for each workload.
func printTables(w io.Writer, m Machine, runs []Run, meds []Summary, target string) {
	if len(runs) == 0 {
		return
	}
	defer fmt.Fprintf(w, "\nloadavg at end: %s\n", m.LoadAvgEnd)
	if runs[0].OpenLoop != nil {
		printOpenLoop(w, runs)
		return
	}
	printColumns(w)
	for _, r := range runs {
		s := summarize(r)
		fmt.Fprintf(w, rowNums, s.Workload, s.Target, fmt.Sprint(r.N), s.ProduceRecS, s.ProduceMiBS, s.P50ms, s.P99ms, s.ConsumeRecS, s.ConsumeMiBS, s.ProduceCPUGiB, s.ConsumeCPUGiB)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "medians:")
	printColumns(w)
	for _, r := range ratios(meds, target) {
		n := "med"
		format := rowNums
		if r.Runs == 0 {
			n, format = "", rowRate
		}
		fmt.Fprintf(w, format, r.Workload, r.Target, n, r.ProduceRecS, r.ProduceMiBS, r.P50ms, r.P99ms, r.ConsumeRecS, r.ConsumeMiBS, r.ProduceCPUGiB, r.ConsumeCPUGiB)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "requests (medians; franz-go BrokerE2E: start of write to end of response read):")
	fmt.Fprintf(w, "%-14s %-16s %9s %9s %9s %9s %9s %9s %9s\n",
		"workload", "target", "produces", "KiB/req", "p50 ms", "p99 ms", "fetches", "KiB/resp", "p50 ms")
	for _, r := range meds {
		fmt.Fprintf(w, "%-14s %-16s %9.0f %9.1f %9.2f %9.2f %9.0f %9.1f %9.2f\n",
			r.Workload, r.Target, r.ProduceReqs, r.ProduceReqKB, r.ProduceReq50, r.ProduceReq99, r.FetchReqs, r.FetchRespKB, r.FetchReq50)
	}
}

// ratios returns the medians with, after each workload's rows, a row of
// target/kfake (Runs == 0 marks it).
func ratios(meds []Summary, target string) []Summary {
	var out []Summary
	for i, s := range meds {
		out = append(out, s)
		last := i == len(meds)-1 || meds[i+1].Workload != s.Workload
		if !last {
			continue
		}
		var a, b *Summary
		for j := range meds {
			if meds[j].Workload != s.Workload {
				continue
			}
			switch meds[j].Target {
			case target:
				a = &meds[j]
			case "kfake":
				b = &meds[j]
			}
		}
		if a != nil && b != nil {
			out = append(out, ratio(*a, *b))
		}
	}
	return out
}

// writeJSON prints everything as one JSON document: machine, options,
// every run, the medians, and the target/kfake ratios.
func writeJSON(w io.Writer, m Machine, o Options, runs []Run, meds []Summary, target string) error {
	var rs []Summary
	for _, r := range ratios(meds, target) {
		if r.Runs == 0 {
			rs = append(rs, r)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Machine Machine   `json:"machine"`
		Options Options   `json:"options"`
		Runs    []Run     `json:"runs"`
		Medians []Summary `json:"medians"`
		Ratios  []Summary `json:"ratios"`
	}{m, o, runs, meds, rs})
}
