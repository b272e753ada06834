package throttle

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/brokerd/brokerd/raftstore/quota"
)

// Under a clients/<default> quota each client id gets its own rate. Once
// an attacker has filled the rate table with live junk client ids, a
// client id whose rate shard is full must still be throttled (it shares
// its level's overflow rate).
func TestFullRateTableStillThrottles(t *testing.T) {
	const limit = 1000 // 1 KB/s
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{ClientID: quota.Default}: {quota.ProducerByteRate: limit}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	now := time.Now()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range maxClients {
		m.Record(quota.ProducerByteRate, "ANONYMOUS", fmt.Sprintf("junk-%d", i), 1, now)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	nr := 0
	for i := range m.rates {
		nr += len(m.rates[i].m)
	}
	t.Logf("%d clients, %d rates: %.0f bytes per tracked client id", m.count.Load(), nr, float64(after.HeapAlloc-before.HeapAlloc)/float64(m.count.Load()))
	evaders := 0
	defer func() { t.Logf("%d of 64 fresh client ids are never throttled", evaders) }()
	// The attacker tries a handful of client ids until one is not
	// throttled (it sees throttle_time_ms = 0).
	for i := range 64 {
		id := fmt.Sprintf("evader-%d", i)
		var sent float64
		var throttled time.Duration
		for range 1000 {
			throttled += m.Record(quota.ProducerByteRate, "ANONYMOUS", id, 5000, now.Add(time.Second))
			sent += 5000
		}
		if throttled == 0 {
			if evaders == 0 {
				t.Errorf("client id %q sent %.0f bytes in one second against a %d B/s quota (%.0fx) and was never throttled",
					id, sent, limit, sent/10/limit)
			}
			evaders++
		}
	}
}

// Control: the same traffic without the junk is throttled at once.
func TestFreshClientThrottled(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{ClientID: quota.Default}: {quota.ProducerByteRate: 1000}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	var throttled time.Duration
	for range 1000 {
		throttled += m.Record(quota.ProducerByteRate, "ANONYMOUS", "evader", 5000, t0.Add(time.Second))
	}
	if throttled == 0 {
		t.Fatal("not throttled")
	}
}

// A user quota keeps every client entry of that user alive (Sweep keeps a
// client that references one live rate), so one user can fill the client
// table with long client ids. The table must not keep those ids, and a
// request from a client id not yet cached must not run a full Sweep under
// every shard's write lock.
func TestFullClientTableCheapAndSmall(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Named("mallory")}: {quota.ConsumerByteRate: 1 << 20}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pad := string(make([]byte, 1024))
	for i := range maxClients {
		// An empty Fetch records 0 bytes: no throttle, but an entry.
		m.Record(quota.ConsumerByteRate, "mallory", fmt.Sprintf("%s%d", pad, i), 0, t0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	t.Logf("%d clients with 1 KiB client ids retain %.1f MiB", m.count.Load(), retained/(1<<20))
	if per := retained / float64(m.count.Load()); per > 512 {
		t.Errorf("each cached client retains %.0f bytes: its client id is kept", per)
	}
	// mallory stays active: the periodic sweep frees nothing.
	m.Record(quota.ConsumerByteRate, "mallory", "keepalive", 0, t0)
	m.Sweep(t0.Add(-m.span()))
	if n := m.count.Load(); n < maxClients*9/10 {
		t.Fatalf("sweep freed entries: %d", n)
	}
	// Any other user's request with a new client id must not cost a sweep.
	start := time.Now()
	const n = 50
	for i := range n {
		m.Record(quota.ConsumerByteRate, "victim", fmt.Sprintf("v-%d", i), 0, t0)
	}
	per := time.Since(start) / n
	t.Logf("Record for an uncached client with a full table: %v each", per)
	// And the same client id again is still not cached: it pays again.
	start = time.Now()
	for range n {
		m.Record(quota.ConsumerByteRate, "victim", "v-0", 0, t0)
	}
	t.Logf("Record for the same client again: %v each (count %d)", time.Since(start)/n, m.count.Load())
	if per > 200*time.Microsecond {
		t.Errorf("an uncached client's Record takes %v with the table full", per)
	}
}

// Sweep drops an idle rate from the rate table but keeps a client entry
// that still references it (because another of its rates is live). The
// next client of the same entity gets a fresh rate: the entity must not
// end up with two rates (its quota doubled).
func TestSweptRateDoesNotSplitEntity(t *testing.T) {
	const limit = 1000
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Named("alice")}: {quota.ProducerByteRate: limit, quota.ConsumerByteRate: limit}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	m.Record(quota.ProducerByteRate, "alice", "a", 1, t0)
	// alice keeps fetching (0 bytes) with client "a"; her producer rate
	// goes idle and the periodic sweep drops it from the table.
	now := t0.Add(20 * time.Second)
	m.Record(quota.ConsumerByteRate, "alice", "a", 0, now)
	m.Sweep(now.Add(-m.span()))
	now = now.Add(time.Second)
	d1 := m.Record(quota.ProducerByteRate, "alice", "b", 9000, now) // fresh rate in the table
	d2 := m.Record(quota.ProducerByteRate, "alice", "a", 9000, now) // orphaned rate
	if d1 == 0 && d2 == 0 {
		t.Errorf("alice produced 18000 bytes at once under a %d B/s user quota (1800 B/s over the 10 s floor) and was not throttled", limit)
	}
}

// Kafka bounds a request_percentage throttle to quota.window.size.seconds
// (ClientRequestQuotaManager.maxThrottleTimeMs).
func TestRequestPercentageThrottleCapped(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Default}: {quota.RequestPercentage: 1}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	// One request whose handler took 1 s of wall time (e.g. waited for a
	// raft commit or a slow disk).
	d := m.Record(quota.RequestPercentage, "u", "c", 100, t0)
	if d > DefaultWindow.Size {
		t.Errorf("request quota throttle %v; Kafka caps it at %v", d, DefaultWindow.Size)
	}
}

func BenchmarkRecordNoQuotaOnKey(b *testing.B) {
	// Some unrelated quota exists (so enforceQuotas does not return at
	// Len()==0): cost of a Produce from a client with no quota.
	benchRecord(b, quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Named("someone-else")}: {quota.ProducerByteRate: 1e6}}))
}

// A byte-rate throttle is capped at the window span, however large the
// request.
func TestByteRateThrottleCapped(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Default}: {quota.ProducerByteRate: 1}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	d := m.Record(quota.ProducerByteRate, "u", "c", 100<<20, t0)
	if want := 11 * time.Second; d != want {
		t.Errorf("throttle %v for 100 MiB at 1 B/s, want the %v window span", d, want)
	}
}

// A rate Sweep retired is resolved again by the clients that used it, and
// one created but not yet recorded in is not swept.
func TestSweepRetiresAndReresolves(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Named("alice")}: {quota.ProducerByteRate: 1000}})
	m := New(DefaultWindow, func() *quota.Index { return idx })
	m.Record(quota.ProducerByteRate, "alice", "a", 1, t0)
	m.Sweep(t0.Add(time.Second))
	if m.count.Load() != 0 {
		t.Fatalf("%d clients cached after their only rate was swept", m.count.Load())
	}
	now := t0.Add(2 * time.Second)
	c := m.client(idx, "alice", "b", now)
	m.Sweep(now.Add(-time.Millisecond)) // created at now: not idle
	if c.rate[quota.ProducerByteRate].retired.Load() {
		t.Fatal("a rate created after the sweep's horizon was retired")
	}
}
