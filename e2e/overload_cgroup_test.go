package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// overloadFault floods the cluster with producers faster than it can
// fsync while each broker runs in a memory cgroup of its own (cgroup v1,
// /sys/fs/cgroup/memory): setupNode creates the cgroup and starts the node
// through a wrapper that enters it before it execs brokerd; inject starts
// the producers and a Metadata probe, heal stops them and waits for what
// they buffered. The promise under test: no OOM kill, no produce failed
// (producers are slowed down, not refused), and Metadata answered within
// a second throughout.
type overloadFault struct {
	limit      int64 // bytes, the cgroup's memory limit
	producers  int
	recordSize int
	cgroups    map[int]string

	mu       sync.Mutex
	clients  []*kgo.Client
	stopping atomic.Bool
	wg       sync.WaitGroup
	acked    atomic.Int64
	failed   atomic.Int64
	closed   atomic.Int64
	bytes    atomic.Int64
	errs     []string
	started  time.Time
	flood    time.Duration
	// the Metadata probe
	probes, probeErrs, slowProbes int
	probeMax                      time.Duration
	probeLat                      []time.Duration
	// memory, per node: the cgroup's rss, and the broker's own gauges
	peakRSS    map[int]int64
	peakMetric map[int]map[string]float64
}

// overloadMetrics are the gauges sampled from each broker during the
// flood: its request budget in use, the Go heap, memory from the OS.
var overloadMetrics = []string{"brokerd_inflight_request_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_sys_bytes"}

// saveHeapProfile keeps a broker's latest heap profile in path (an
// experiment: E2E_OVERLOAD_HEAP_PROFILE names the file, .<node> added).
func saveHeapProfile(admin, path string) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + admin + "/debug/pprof/heap")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusOK {
		os.WriteFile(path+".tmp", b, 0o644)
		os.Rename(path+".tmp", path)
	}
}

// scrapeGauges reads the named gauges from a broker's /metrics; missing
// ones (or an unreachable broker) are left out.
func scrapeGauges(admin string, names []string) map[string]float64 {
	out := map[string]float64{}
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		for _, n := range names {
			if v, ok := strings.CutPrefix(line, n+" "); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					out[n] = f
				}
			}
		}
	}
	return out
}

var (
	_ fault     = (*overloadFault)(nil)
	_ nodeSetup = (*overloadFault)(nil)
)

const cgroupMemRoot = "/sys/fs/cgroup/memory"

func newOverloadFault(limit int64, producers, recordSize int) *overloadFault {
	return &overloadFault{limit: limit, producers: producers, recordSize: recordSize,
		cgroups: map[int]string{}, peakRSS: map[int]int64{}, peakMetric: map[int]map[string]float64{}}
}

func (f *overloadFault) name() string { return "overload" }

// setupNode puts node i in a memory cgroup of f.limit bytes (swap
// included where the kernel accounts it) for every start.
func (f *overloadFault) setupNode(t *testing.T, c *procCluster, i int) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a memory cgroup")
	}
	if _, err := os.Stat(filepath.Join(cgroupMemRoot, "memory.limit_in_bytes")); err != nil {
		t.Skipf("no cgroup v1 memory controller: %v", err)
	}
	cg := filepath.Join(cgroupMemRoot, fmt.Sprintf("brokerd-e2e-%d-%d-%d", os.Getpid(), i+1, time.Now().UnixNano()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup: %v", err)
	}
	bp := c.nodes[i]
	t.Cleanup(func() {
		if bp.running() {
			bp.cmd.Process.Kill()
			<-bp.exited
		}
		// The cgroup's directory goes once no process is left in it.
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			err := os.Remove(cg)
			if err == nil {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("remove cgroup %s: %v", cg, err)
				break
			}
		}
	})
	write := func(file string, v int64) {
		if err := os.WriteFile(filepath.Join(cg, file), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
			t.Fatalf("cgroup %s: %v", file, err)
		}
	}
	write("memory.limit_in_bytes", f.limit)
	if _, err := os.Stat(filepath.Join(cg, "memory.memsw.limit_in_bytes")); err == nil {
		write("memory.memsw.limit_in_bytes", f.limit)
	}
	f.cgroups[i] = cg
	// A wrapper enters the cgroup and execs brokerd: the process is in it
	// from its first allocation, on every start.
	wrapper := filepath.Join(t.TempDir(), "brokerd-in-cgroup")
	env := ""
	if v := os.Getenv("E2E_OVERLOAD_GOMEMLIMIT"); v != "" {
		env = "GOMEMLIMIT=" + v + " " // an experiment: brokerd sets none itself
	}
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s/cgroup.procs || exit 97\n%sexec %s \"$@\"\n", cg, env, bp.bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	bp.bin = wrapper
	return nil
}

// cgroupStat reads one number from a cgroup file, or a "key value" line
// of it when key is not empty.
func cgroupStat(cg, file, key string) int64 {
	b, err := os.ReadFile(filepath.Join(cg, file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fields := strings.Fields(line)
		if key == "" && len(fields) == 1 {
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			return n
		}
		if len(fields) == 2 && fields[0] == key {
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			return n
		}
	}
	return -1
}

// dialFrom dials from a loopback address of its own, so that the broker
// sees each client as a different source (as it would separate hosts).
func dialFrom(local string) func(ctx context.Context, network, host string) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	return d.DialContext
}

func (f *overloadFault) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	const topic = "overload"
	f.stopping.Store(false)
	f.started = time.Now()
	value := make([]byte, f.recordSize)
	for i := range value {
		value[i] = byte(rng.IntN(256)) // incompressible
	}
	for p := 0; p < f.producers; p++ {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(c.seeds()...),
			kgo.Dialer(dialFrom(fmt.Sprintf("127.0.0.%d", 10+p))),
			kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.MaxBufferedBytes(32<<20),
			kgo.RecordDeliveryTimeout(2*time.Minute),
		)
		if err != nil {
			t.Fatal(err)
		}
		f.clients = append(f.clients, cl)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for n := 0; !f.stopping.Load(); n++ {
				v := bytes.Clone(value)
				copy(v, fmt.Sprintf("p%02d-%09d", p, n))
				cl.Produce(context.Background(), &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
					if err != nil {
						if f.stopping.Load() && errors.Is(err, kgo.ErrClientClosed) {
							f.closed.Add(1) // the broker died, and heal closed the client
							return
						}
						f.failed.Add(1)
						f.mu.Lock()
						if len(f.errs) < 5 {
							f.errs = append(f.errs, err.Error())
						}
						f.mu.Unlock()
						return
					}
					f.acked.Add(1)
					f.bytes.Add(int64(len(r.Value)))
				})
			}
		}()
	}
	// Metadata from a client of its own every 100 ms; memory sampled
	// alongside.
	probe, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.Dialer(dialFrom("127.0.0.2")))
	if err != nil {
		t.Fatal(err)
	}
	f.clients = append(f.clients, probe)
	f.wg.Add(1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for !f.stopping.Load() {
			time.Sleep(500 * time.Millisecond)
			for i, bp := range c.nodes {
				if path := os.Getenv("E2E_OVERLOAD_HEAP_PROFILE"); path != "" {
					saveHeapProfile(bp.adminAddr(), fmt.Sprintf("%s.%d", path, i+1))
				}
				g := scrapeGauges(bp.adminAddr(), overloadMetrics)
				f.mu.Lock()
				if f.peakMetric[i] == nil {
					f.peakMetric[i] = map[string]float64{}
				}
				for n, v := range g {
					f.peakMetric[i][n] = max(f.peakMetric[i][n], v)
				}
				f.mu.Unlock()
			}
		}
	}()
	go func() {
		defer f.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for !f.stopping.Load() {
			<-tick.C
			for i, cg := range f.cgroups {
				rss := cgroupStat(cg, "memory.stat", "rss")
				f.mu.Lock()
				f.peakRSS[i] = max(f.peakRSS[i], rss)
				f.mu.Unlock()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			start := time.Now()
			_, err := req.RequestWith(ctx, probe)
			took := time.Since(start)
			cancel()
			f.mu.Lock()
			f.probes++
			f.probeLat = append(f.probeLat, took)
			f.probeMax = max(f.probeMax, took)
			if err != nil {
				f.probeErrs++
				if len(f.errs) < 10 {
					f.errs = append(f.errs, "metadata: "+err.Error())
				}
			}
			if took > time.Second {
				f.slowProbes++
			}
			f.mu.Unlock()
		}
	}()
}

func (f *overloadFault) heal(t *testing.T, c *procCluster) {
	t.Helper()
	f.stopping.Store(true)
	f.flood = time.Since(f.started)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alive := true
	for _, bp := range c.nodes {
		alive = alive && bp.running()
	}
	var flushErr error
	for _, cl := range f.clients {
		if !alive {
			break // what is buffered fails when the client closes
		}
		if err := cl.Flush(ctx); err != nil && flushErr == nil {
			flushErr = err
		}
	}
	for _, cl := range f.clients {
		cl.Close()
	}
	f.wg.Wait()
	f.clients = nil
	if flushErr != nil {
		t.Errorf("flush the producers: %v", flushErr)
	}
}

// report logs what the flood measured and fails the test for an OOM
// kill, a failed produce, or a slow Metadata answer.
func (f *overloadFault) report(t *testing.T, c *procCluster) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	acked, failed := f.acked.Load(), f.failed.Load()
	mib := float64(f.bytes.Load()) / (1 << 20)
	lat := slices.Clone(f.probeLat)
	slices.Sort(lat)
	p99 := time.Duration(0)
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	t.Logf("overload: %d producers of %d-byte records for %s: %d acknowledged (%.0f MiB, %.1f MiB/s), %d failed, %d dropped when the clients closed",
		f.producers, f.recordSize, f.flood.Round(time.Second), acked, mib, mib/f.flood.Seconds(), failed, f.closed.Load())
	t.Logf("overload: Metadata %d probes, max %s, p99 %s, %d over 1s, %d errors", f.probes, f.probeMax.Round(time.Millisecond), p99.Round(time.Millisecond), f.slowProbes, f.probeErrs)
	for i, cg := range f.cgroups {
		t.Logf("overload: node %d cgroup: limit %d MiB, peak usage (page cache included) %d MiB, peak rss %d MiB, failcnt %d, oom_kill %d, under_oom %d",
			i+1, cgroupStat(cg, "memory.limit_in_bytes", "")>>20, cgroupStat(cg, "memory.max_usage_in_bytes", "")>>20, f.peakRSS[i]>>20,
			cgroupStat(cg, "memory.failcnt", ""), cgroupStat(cg, "memory.oom_control", "oom_kill"), cgroupStat(cg, "memory.oom_control", "under_oom"))
		var peaks []string
		for _, n := range overloadMetrics {
			peaks = append(peaks, fmt.Sprintf("%s %.0f MiB", n, f.peakMetric[i][n]/(1<<20)))
		}
		t.Logf("overload: node %d peaks: %s", i+1, strings.Join(peaks, ", "))
	}
	for i, bp := range c.nodes {
		if !bp.running() {
			t.Errorf("node %d exited: %v", i+1, bp.waitErr)
		}
		if n := cgroupStat(f.cgroups[i], "memory.oom_control", "oom_kill"); n > 0 {
			t.Errorf("node %d: %d OOM kills in its cgroup", i+1, n)
		}
	}
	if failed > 0 {
		t.Errorf("%d produces failed; first: %q", failed, f.errs)
	}
	if f.slowProbes > 0 || f.probeErrs > 0 {
		t.Errorf("Metadata: %d answers took over a second (max %s), %d failed: %q", f.slowProbes, f.probeMax, f.probeErrs, f.errs)
	}
	if acked == 0 {
		t.Error("nothing was acknowledged")
	}
}

// TestOverloadCgroup: one broker in a 512 MiB memory cgroup, 20 producers
// of 16 KiB records at full speed for a minute (E2E_OVERLOAD_SECONDS
// changes that; E2E_OVERLOAD_GOMEMLIMIT and E2E_OVERLOAD_OVERRIDES are
// for experiments): no OOM kill, no produce fails, Metadata is answered
// within a second throughout.
func TestOverloadCgroup(t *testing.T) {
	matrixTest(t, true)
	dur := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("E2E_OVERLOAD_SECONDS")); err == nil && s > 0 {
		dur = time.Duration(s) * time.Second
	}
	f := newOverloadFault(512<<20, 20, 16<<10)
	// Bounded disk use: a minute at full speed writes gigabytes.
	args := []string{"--override", "log.segment.bytes=67108864",
		"--override", "log.retention.bytes=268435456",
		"--override", "log.retention.check.interval.ms=5000"}
	// Experiments: E2E_OVERLOAD_OVERRIDES="queued.max.request.bytes=67108864,..."
	for _, kv := range strings.Split(os.Getenv("E2E_OVERLOAD_OVERRIDES"), ",") {
		if kv != "" {
			args = append(args, "--override", kv)
		}
	}
	c := newProcClusterEach(t, 1, func(c *procCluster, i int) []string {
		return f.setupNode(t, c, i)
	}, args...)
	createClusterTopic(t, c, "overload", 6)
	f.inject(t, c, rand.New(rand.NewPCG(1, 2)))
	for end := time.Now().Add(dur); time.Now().Before(end) && c.nodes[0].running(); {
		time.Sleep(200 * time.Millisecond)
	}
	if !c.nodes[0].running() {
		t.Logf("the broker exited %s into the flood", time.Since(f.started).Round(time.Millisecond))
	}
	f.heal(t, c)
	f.report(t, c)
}
