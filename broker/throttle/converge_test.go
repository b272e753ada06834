package throttle

import (
	"testing"
	"time"

	"github.com/brokerd/brokerd/raftstore/quota"
)

// TestThrottleConverges: a client that sends whenever it is not throttled
// averages its quota once past the window's first burst.
func TestThrottleConverges(t *testing.T) {
	cases := []struct {
		name  string
		w     Window
		quota float64
		req   float64
		gap   time.Duration
	}{
		{"kafka window, 64 KiB requests", DefaultWindow, 256 << 10, 64 << 10, time.Millisecond},
		{"short window, 64 KiB requests", Window{11, 100 * time.Millisecond}, 256 << 10, 64 << 10, time.Millisecond},
		{"short window, small requests", Window{11, 100 * time.Millisecond}, 1 << 20, 1 << 10, 100 * time.Microsecond},
	}
	for _, c := range cases {
		idx := quota.NewIndex(map[quota.Entity]quota.Values{{ClientID: quota.Named("c")}: {quota.ProducerByteRate: c.quota}})
		m := New(c.w, func() *quota.Index { return idx })
		span := time.Duration(c.w.Samples) * c.w.Size
		now := t0
		end := t0.Add(5 * span)
		var sent float64
		for now.Before(end) {
			d := m.Record(quota.ProducerByteRate, "u", "c", c.req, now)
			if now.After(t0.Add(2 * span)) {
				sent += c.req
			}
			now = now.Add(d + c.gap)
		}
		rate := sent / (3 * span).Seconds()
		if rate > 1.1*c.quota || rate < 0.9*c.quota {
			t.Errorf("%s: %.0f B/s against a quota of %.0f", c.name, rate, c.quota)
		}
	}
}
