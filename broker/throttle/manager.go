package throttle

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerd/brokerd/raftstore/quota"
)

const shards = 32

// maxClients bounds the clients (user and client id pairs) whose
// resolution is cached, and the entity rates kept. Both tables are keyed
// by a seeded 128-bit hash (keys.go), so a client id's length costs
// nothing. A full client shard evicts an arbitrary entry (it only caches
// Resolve); a full rate shard sends new entities of a precedence level to
// that level's shared overflow rate, which is stricter, never looser.
const maxClients = 1 << 16

// Manager measures clients against the quotas of the index it is given.
type Manager struct {
	w     Window
	index func() *quota.Index
	keys  hasher

	clients [shards]clientShard
	rates   [shards]rateShard
	count   atomic.Int64 // clients cached
	// overflow are the rates of entities that found their rate shard
	// full, one per key and precedence level.
	overflow [quota.NumKeys][quota.Levels]*Rate

	throttled  [quota.NumKeys]atomic.Int64
	throttleMs [quota.NumKeys]atomic.Int64
}

type rateKey struct {
	key   quota.Key
	level uint8
	h     hkey
}

// client caches what Resolve found for one user and client id under the
// index of generation gen.
type client struct {
	gen   uint64
	limit [quota.NumKeys]float64 // 0: no quota on the key
	rate  [quota.NumKeys]*Rate
}

// stale reports whether a rate the client uses was dropped by Sweep: the
// client must resolve again, so that it shares the entity's new rate.
func (c *client) stale() bool {
	for _, r := range c.rate {
		if r != nil && r.retired.Load() {
			return true
		}
	}
	return false
}

type clientShard struct {
	mu sync.RWMutex
	m  map[hkey]*client
}

type rateShard struct {
	mu sync.Mutex
	m  map[rateKey]*Rate
}

// New returns a manager over w that reads the quotas from index.
func New(w Window, index func() *quota.Index) *Manager {
	m := &Manager{w: w.normalized(), index: index, keys: newHasher()}
	for i := range m.clients {
		m.clients[i].m = map[hkey]*client{}
		m.rates[i].m = map[rateKey]*Rate{}
	}
	for k := range m.overflow {
		for l := range m.overflow[k] {
			m.overflow[k][l] = NewRate(m.w)
		}
	}
	return m
}

// Window is the manager's quota window.
func (m *Manager) Window() Window { return m.w }

// Limited reports whether any entity sets a quota on k; when none does,
// Record on k returns 0 at once.
func (m *Manager) Limited(k quota.Key) bool { return m.index().Has(k) }

// MaxThrottle is the longest throttle Record returns for k: one window
// for request_percentage (Kafka's ClientRequestQuotaManager), the whole
// window span for the byte rates. A client that reconnects evades any
// mute, so a longer one would enforce nothing and only hold a connection;
// what bounds a byte rate beyond that is answering a throttled Fetch empty
// (broker/quota_fetch.go).
func (m *Manager) MaxThrottle(k quota.Key) time.Duration {
	if k == quota.RequestPercentage {
		return m.w.Size
	}
	return m.span()
}

// Record adds v to the rate of the quota entity that a client with user
// name user and client id clientID maps to for k, and returns the throttle
// time the client has earned (0 when within its quota or without one).
func (m *Manager) Record(k quota.Key, user, clientID string, v float64, now time.Time) time.Duration {
	x := m.index()
	if !x.Has(k) {
		return 0
	}
	for range 2 {
		c := m.client(x, user, clientID, now)
		if c.limit[k] == 0 {
			return 0
		}
		rate, span, ok := c.rate[k].record(now, v)
		if !ok {
			continue // swept meanwhile: resolve again
		}
		d := min(ThrottleTime(rate, c.limit[k], span), m.MaxThrottle(k))
		if d > 0 {
			m.throttled[k].Add(1)
			m.throttleMs[k].Add(d.Milliseconds())
		}
		return d
	}
	return 0
}

// Unrecord takes v back off the rate Record added it to, as Kafka's
// unrecordQuotaSensor does for a throttled Fetch answered empty.
func (m *Manager) Unrecord(k quota.Key, user, clientID string, v float64, now time.Time) {
	x := m.index()
	if !x.Has(k) {
		return
	}
	if c := m.client(x, user, clientID, now); c.limit[k] != 0 {
		c.rate[k].record(now, -v)
	}
}

// MaxValue is the most a client may record on k at once without being
// throttled however idle it was: limit × (samples-1) windows, Kafka's
// getMaxValueInQuotaWindow. ok is false when the client has no quota on k.
func (m *Manager) MaxValue(k quota.Key, user, clientID string, now time.Time) (v float64, ok bool) {
	x := m.index()
	if !x.Has(k) {
		return 0, false
	}
	c := m.client(x, user, clientID, now)
	if c.limit[k] == 0 {
		return 0, false
	}
	return c.limit[k] * float64(m.w.Samples-1) * m.w.Size.Seconds(), true
}

// Stats are the throttled responses and the throttle time given, by key.
func (m *Manager) Stats(k quota.Key) (throttled, throttleMs int64) {
	return m.throttled[k].Load(), m.throttleMs[k].Load()
}

// client returns the cached resolution of a client under x, resolving it
// again when the quotas changed or a rate it used was swept. It never
// sweeps: a full shard drops an arbitrary entry.
func (m *Manager) client(x *quota.Index, user, clientID string, now time.Time) *client {
	h := m.keys.pair(user, clientID)
	sh := &m.clients[h.a%shards]
	sh.mu.RLock()
	c := sh.m[h]
	sh.mu.RUnlock()
	if c != nil && c.gen == x.Gen() && !c.stale() {
		return c
	}
	nc := &client{gen: x.Gen()}
	for k := range quota.NumKeys {
		if match, ok := x.Resolve(k, user, clientID); ok {
			nc.limit[k] = match.Limit
			nc.rate[k] = m.rate(k, match, now)
		}
	}
	sh.mu.Lock()
	if _, had := sh.m[h]; !had {
		if len(sh.m) >= maxClients/shards {
			for old := range sh.m {
				delete(sh.m, old)
				break
			}
		} else {
			m.count.Add(1)
		}
	}
	sh.m[h] = nc
	sh.mu.Unlock()
	return nc
}

// rate returns the shared rate of the quota entity match names, creating
// it (with now as its last use, so Sweep does not take it before its first
// record); the level's overflow rate when the shard is full.
func (m *Manager) rate(k quota.Key, match quota.Match, now time.Time) *Rate {
	rk := rateKey{key: k, level: match.Level, h: m.keys.pair(match.User, match.ClientID)}
	sh := &m.rates[rk.h.a%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r := sh.m[rk]
	if r == nil {
		if len(sh.m) >= maxClients/shards {
			return m.overflow[k][match.Level]
		}
		r = NewRate(m.w)
		r.last = now.UnixNano()
		sh.m[rk] = r
	}
	return r
}

// span is the whole window: a rate idle longer holds nothing.
func (m *Manager) span() time.Duration { return time.Duration(m.w.Samples) * m.w.Size }

// Sweep forgets the rates nothing was recorded in since before (marking
// them retired, so the clients that used them resolve again), and the
// cached clients that use a retired rate or none.
func (m *Manager) Sweep(before time.Time) {
	t := before.UnixNano()
	for i := range m.rates {
		sh := &m.rates[i]
		sh.mu.Lock()
		for k, r := range sh.m {
			if r.retireIfIdle(t) {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
	for i := range m.clients {
		sh := &m.clients[i]
		sh.mu.Lock()
		for k, c := range sh.m {
			if c.stale() || c.rate == [quota.NumKeys]*Rate{} {
				delete(sh.m, k)
				m.count.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
}

// Run sweeps idle rates every interval until stop closes.
func (m *Manager) Run(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			m.Sweep(now.Add(-m.span()))
		}
	}
}
