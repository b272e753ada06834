package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// Options are the command-line settings shared by all workloads.
type Options struct {
	Brokers     string        `json:"brokers"`
	Workloads   string        `json:"workloads"`
	Records     int64         `json:"records"`
	Duration    time.Duration `json:"duration_ns"`
	Count       int           `json:"count"`
	Partitions  int           `json:"partitions"`
	Replication int           `json:"replication"`
	Inflight    int           `json:"inflight"`
	Linger      time.Duration `json:"linger_ns"`
	Compression string        `json:"compression"`
	DataDir     string        `json:"-"`
	JSON        bool          `json:"-"`
	CPUProfile  string        `json:"-"`
	Timeout     time.Duration `json:"timeout_ns"`
	Stall       time.Duration `json:"stall_ns"`
	Verbose     bool          `json:"-"`
	MaxProduceV int           `json:"max_produce_version"`
	KeepTopics  bool          `json:"-"`
	NoPeer      bool          `json:"no_peer,omitempty"`
	Nexmark     string        `json:"-"`
	StepRecords int           `json:"-"`
	Serve       string        `json:"-"`
	Rate        int           `json:"rate,omitempty"`
	ValueSize   int           `json:"value_size,omitempty"`
}

func parseFlags() Options {
	var o Options
	flag.StringVar(&o.Brokers, "brokers", "", "external broker(s) host:port[,host:port]; skips the in-process brokerd")
	flag.StringVar(&o.Workloads, "workloads", "", "comma-separated workloads to run (default all: "+strings.Join(workloadNames(), ",")+")")
	flag.Int64Var(&o.Records, "records", 0, "records to produce per run; overrides -duration when > 0")
	flag.DurationVar(&o.Duration, "duration", 6*time.Second, "how long each produce phase runs (when -records is 0)")
	flag.IntVar(&o.Count, "count", 1, "repeat each run this many times and print the median")
	flag.IntVar(&o.Partitions, "partitions", 4, "partitions of each fresh topic")
	flag.IntVar(&o.Replication, "replication", 1, "replication factor of each fresh topic")
	flag.IntVar(&o.Inflight, "inflight", 10000, "records in flight per producer (produce calls awaiting their promise)")
	flag.DurationVar(&o.Linger, "linger", time.Millisecond, "producer linger")
	flag.StringVar(&o.Compression, "compression", "none", "producer batch compression: none, snappy, lz4, zstd, gzip")
	flag.StringVar(&o.DataDir, "dir", "", "parent of the in-process brokerd's temporary data directory (default: os.TempDir)")
	flag.BoolVar(&o.JSON, "json", false, "print JSON instead of tables")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole program to this file (labelled per target and side)")
	flag.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "give up on one run after this long")
	flag.DurationVar(&o.Stall, "stall", 30*time.Second, "fail a produce phase when no record is acknowledged for this long (0: never)")
	flag.BoolVar(&o.Verbose, "v", false, "log the in-process broker (debug) and the franz-go clients (info) to stderr")
	flag.IntVar(&o.MaxProduceV, "max-produce-version", -1, "cap the Produce API version the clients use (-1: franz-go's default); at 3 or below franz-go's idempotent producer keeps one request in flight per broker instead of five")
	flag.BoolVar(&o.KeepTopics, "keep-topics", false, "keep each run's topic and its data on the broker afterwards (for example to measure a restart with them)")
	flag.BoolVar(&o.NoPeer, "no-peer", false, "skip the kfake peer (for runs that only load a broker, such as bench/restart-time.sh)")
	flag.StringVar(&o.Nexmark, "nexmark", "", "run Nexmark-style processor queries instead (q1,q2,q5): -records events (default 1,000,000), -partitions")
	flag.IntVar(&o.StepRecords, "step-records", 10000, "-nexmark: the processors' step.max_records")
	flag.IntVar(&o.Rate, "rate", 0, "open loop: send this many records per second whatever the acks, for -duration (or -records), and print the latency from each record's scheduled send to its ack and to its consumption (p50/p99/p999)")
	flag.IntVar(&o.ValueSize, "value-size", 1024, "-rate: the record value size in bytes")
	flag.StringVar(&o.Serve, "serve", "", "internal: run this target (brokerd or kfake) for a parent bench process")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o Options) error {
	if o.Serve != "" {
		return serveChild(o)
	}
	if o.Nexmark != "" {
		stop, err := startProfile(o.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
		return runNexmark(o)
	}
	if o.Count < 1 || o.Partitions < 1 || o.Inflight < 1 || (o.Records <= 0 && o.Duration <= 0) {
		return fmt.Errorf("need -count, -partitions, -inflight >= 1 and -records or -duration > 0")
	}
	if _, err := codec(o.Compression); err != nil {
		return err
	}
	ws, err := selectWorkloads(o)
	if err != nil {
		return err
	}
	profiled := 0
	profile := func(name string) func() string {
		return func() string {
			if o.CPUProfile == "" {
				return ""
			}
			profiled++
			return fmt.Sprintf("%s.%s.%d", o.CPUProfile, name, profiled)
		}
	}
	targets := []Target{processTarget{inner: "brokerd", o: o, profile: profile("brokerd")},
		processTarget{inner: "kfake", o: o, profile: profile("kfake")}}
	if o.Brokers != "" {
		targets[0] = externalTarget{seeds: o.Brokers}
	}
	if o.NoPeer {
		targets = targets[:1]
	}
	stop, err := startProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stop()

	m := machineInfo()
	if !o.JSON {
		printHeader(os.Stdout, m, o)
	}
	runs, err := runAll(context.Background(), o, ws, targets)
	meds := medians(runs)
	m.LoadAvgEnd = loadAvg()
	if o.JSON {
		if jerr := writeJSON(os.Stdout, m, o, runs, meds, targets[0].Name()); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		printTables(os.Stdout, m, runs, meds, targets[0].Name())
	}
	return err
}
