package throttle

import (
	"math"
	"testing"
	"time"

	"github.com/brokerd/brokerd/raftstore/quota"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestRateWindow(t *testing.T) {
	w := Window{Samples: 11, Size: time.Second}
	cases := []struct {
		name     string
		recs     []rec
		at       time.Duration
		wantRate float64
		wantSpan time.Duration
	}{
		{"one value: over the 10 s floor", []rec{{0, 1000}}, 0, 100, 10 * time.Second},
		{"burst in one window", []rec{{0, 500}, {100 * time.Millisecond, 500}}, 200 * time.Millisecond, 100, 10 * time.Second},
		{"steady 100/s for 20 s", steady(100, 20), 20*time.Second + 500*time.Millisecond, 100 * 11 / 10.5, 10500 * time.Millisecond},
		{"old samples drop out", []rec{{0, 1e6}, {12 * time.Second, 10}}, 12 * time.Second, 1, 10 * time.Second},
		{"nothing", nil, 5 * time.Second, 0, 10 * time.Second},
	}
	for _, c := range cases {
		r := NewRate(w)
		for _, x := range c.recs {
			r.Record(t0.Add(x.at), x.v)
		}
		rate, span := r.Measure(t0.Add(c.at))
		if math.Abs(rate-c.wantRate) > 1e-6*max(1, c.wantRate) || span != c.wantSpan {
			t.Errorf("%s: rate %v over %v, want %v over %v", c.name, rate, span, c.wantRate, c.wantSpan)
		}
	}
}

// rec is a value recorded at a time after t0.
type rec struct {
	at time.Duration
	v  float64
}

// steady records perSec at each second from 0 to secs.
func steady(perSec float64, secs int) []rec {
	var out []rec
	for s := 0; s <= secs; s++ {
		out = append(out, rec{time.Duration(s) * time.Second, perSec})
	}
	return out
}

func TestThrottleTime(t *testing.T) {
	cases := []struct {
		rate, limit float64
		span        time.Duration
		want        time.Duration
	}{
		{100, 100, 10 * time.Second, 0},
		{50, 100, 10 * time.Second, 0},
		{200, 100, 10 * time.Second, 10 * time.Second},
		{110, 100, 10 * time.Second, time.Second},
		{1e18, 1, time.Second, maxThrottle},
	}
	for _, c := range cases {
		if got := ThrottleTime(c.rate, c.limit, c.span); got != c.want {
			t.Errorf("ThrottleTime(%v, %v, %v) = %v, want %v", c.rate, c.limit, c.span, got, c.want)
		}
	}
}

func TestManagerSharing(t *testing.T) {
	idx := quota.NewIndex(map[quota.Entity]quota.Values{
		{User: quota.Named("alice")}:   {quota.ProducerByteRate: 100},
		{ClientID: quota.Default}:      {quota.ProducerByteRate: 1000},
		{ClientID: quota.Named("big")}: {quota.ConsumerByteRate: 1},
	})
	m := New(Window{Samples: 11, Size: time.Second}, func() *quota.Index { return idx })
	// alice's two client ids share her quota: 1000 bytes over the 10 s
	// floor is 100/s, at the quota; 10 more is over.
	if d := m.Record(quota.ProducerByteRate, "alice", "a", 500, t0); d != 0 {
		t.Fatalf("within quota: throttled %v", d)
	}
	if d := m.Record(quota.ProducerByteRate, "alice", "b", 500, t0); d != 0 {
		t.Fatalf("at quota: throttled %v", d)
	}
	if d := m.Record(quota.ProducerByteRate, "alice", "b", 100, t0); d != time.Second {
		t.Fatalf("10%% over: throttled %v, want 1s", d)
	}
	// Under the default client id quota each client id has its own rate.
	if d := m.Record(quota.ProducerByteRate, "bob", "x", 9000, t0); d != 0 {
		t.Fatalf("bob/x: %v", d)
	}
	if d := m.Record(quota.ProducerByteRate, "carol", "y", 9000, t0); d != 0 {
		t.Fatalf("carol/y shares bob/x's rate: %v", d)
	}
	if d := m.Record(quota.ProducerByteRate, "carol", "x", 2000, t0); d == 0 {
		t.Fatal("carol/x does not share bob/x's client id rate")
	}
	// No quota on a key: nothing measured.
	if d := m.Record(quota.RequestPercentage, "alice", "a", 1e9, t0); d != 0 {
		t.Fatalf("request quota without one: %v", d)
	}
	if n, ms := m.Stats(quota.ProducerByteRate); n != 2 || ms <= 1000 {
		t.Fatalf("stats %d %d", n, ms)
	}
	allocs := testing.AllocsPerRun(1000, func() { m.Record(quota.ProducerByteRate, "alice", "a", 1, t0) })
	if allocs != 0 {
		t.Fatalf("Record allocates %v times", allocs)
	}
	// A quota change is seen at the next record.
	idx = quota.NewIndex(map[quota.Entity]quota.Values{{User: quota.Named("alice")}: {quota.ProducerByteRate: 1e9}})
	if d := m.Record(quota.ProducerByteRate, "alice", "b", 1, t0); d != 0 {
		t.Fatalf("after raising the quota: %v", d)
	}
	// Sweeping after the window forgets idle clients and rates.
	m.Sweep(t0.Add(time.Hour))
	if m.count.Load() != 0 {
		t.Fatalf("%d clients after the sweep", m.count.Load())
	}
}

func BenchmarkRecord(b *testing.B) {
	benchRecord(b, quota.NewIndex(map[quota.Entity]quota.Values{{ClientID: quota.Default}: {quota.ProducerByteRate: 1e12}}))
}

// benchRecord measures Record of one client's Produce under idx.
func benchRecord(b *testing.B, idx *quota.Index) {
	m := New(DefaultWindow, func() *quota.Index { return idx })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := time.Now()
		for pb.Next() {
			m.Record(quota.ProducerByteRate, "ANONYMOUS", "bench", 1000, now)
		}
	})
}
