package throttle

import (
	"sync"
	"sync/atomic"
	"time"
)

// MaxSamples bounds quota.window.num.
const MaxSamples = 64

// Window is Kafka's quota window: Samples windows of Size each
// (quota.window.num, default 11, and quota.window.size.seconds, default 1).
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's default.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

func (w Window) normalized() Window {
	if w.Samples < 2 {
		w.Samples = DefaultWindow.Samples
	}
	w.Samples = min(w.Samples, MaxSamples)
	if w.Size <= 0 {
		w.Size = DefaultWindow.Size
	}
	return w
}

// Rate is a sliding-window rate, as Kafka's Rate over a SampledStat:
// values are summed into Samples buckets of Size, aligned on multiples of
// Size; the rate is the sum of the live buckets over the time they span,
// never less than Samples-1 windows (so one early burst is not a huge
// rate). It is safe for concurrent use.
type Rate struct {
	w     Window
	mu    sync.Mutex
	epoch [MaxSamples]int64 // the window index each bucket holds
	sum   [MaxSamples]float64
	last  int64 // unix ns of the last record (or of creation), for expiry
	// retired: Sweep dropped the rate from its table; what is recorded
	// in it now would split its entity (Manager.Record resolves again).
	retired atomic.Bool
}

// NewRate returns an empty rate over w.
func NewRate(w Window) *Rate {
	r := &Rate{w: w.normalized()}
	for i := range r.epoch {
		r.epoch[i] = -1
	}
	return r
}

// Record adds v at now and returns the rate (per second) and the span it
// is measured over.
func (r *Rate) Record(now time.Time, v float64) (rate float64, span time.Duration) {
	rate, span, _ = r.record(now, v)
	return rate, span
}

// record is Record, refused (ok false) once the rate is retired.
func (r *Rate) record(now time.Time, v float64) (rate float64, span time.Duration, ok bool) {
	ns := now.UnixNano()
	size := int64(r.w.Size)
	e := ns / size
	i := int(e % int64(r.w.Samples))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retired.Load() {
		return 0, 0, false
	}
	if r.epoch[i] != e {
		r.epoch[i], r.sum[i] = e, 0
	}
	r.sum[i] += v
	r.last = max(r.last, ns)
	rate, span = r.measureLocked(ns, e)
	return rate, span, true
}

// Measure returns the rate at now without recording.
func (r *Rate) Measure(now time.Time) (float64, time.Duration) {
	ns := now.UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.measureLocked(ns, ns/int64(r.w.Size))
}

func (r *Rate) measureLocked(ns, e int64) (float64, time.Duration) {
	n := int64(r.w.Samples)
	var total float64
	oldest := e
	for i := range r.w.Samples {
		be := r.epoch[i]
		if be < 0 || be <= e-n || be > e {
			continue // empty, or older than the window
		}
		total += r.sum[i]
		oldest = min(oldest, be)
	}
	size := int64(r.w.Size)
	span := ns - oldest*size
	if floor := (n - 1) * size; span < floor {
		span = floor
	}
	span = max(span, int64(time.Millisecond))
	return total / (float64(span) / float64(time.Second)), time.Duration(span)
}

// retireIfIdle retires the rate if nothing was recorded after t, and
// reports whether it did.
func (r *Rate) retireIfIdle(t int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last >= t {
		return false
	}
	r.retired.Store(true)
	return true
}

// ThrottleTime is Kafka's QuotaUtils.throttleTime: the time for a rate
// over its limit to come back to it if nothing more is recorded,
// (rate - limit) / limit * span. Zero when the rate is within the limit.
// Manager.Record caps it further (MaxThrottle).
func ThrottleTime(rate, limit float64, span time.Duration) time.Duration {
	if limit <= 0 || rate <= limit {
		return 0
	}
	d := (rate - limit) / limit * float64(span)
	if d > float64(maxThrottle) {
		return maxThrottle
	}
	return time.Duration(d)
}

// maxThrottle keeps a throttle within int32 milliseconds (the wire field).
const maxThrottle = time.Duration(1<<31-1) * time.Millisecond
