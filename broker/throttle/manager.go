package throttle

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerd/brokerd/raftstore/quota"
)

const shards = 32

// maxClients bounds the clients (user and client id pairs) and the rates
// remembered; past it, idle ones are swept at once, and if none is idle a
// new client's rate is not remembered (it is measured afresh each time,
// which only makes it less strict).
const maxClients = 1 << 16

// Manager measures clients against the quotas of the index it is given.
type Manager struct {
	w     Window
	index func() *quota.Index
	seed  maphash.Seed

	clients [shards]clientShard
	rates   [shards]rateShard
	count   atomic.Int64 // clients remembered

	throttled  [quota.NumKeys]atomic.Int64
	throttleMs [quota.NumKeys]atomic.Int64
}

type clientKey struct{ user, client string }

type rateKey struct {
	key          quota.Key
	user, client string
}

// client caches what Resolve found for one user and client id, for one
// index.
type client struct {
	index *quota.Index
	limit [quota.NumKeys]float64 // 0: no quota on the key
	rate  [quota.NumKeys]*Rate
}

type clientShard struct {
	mu sync.RWMutex
	m  map[clientKey]*client
}

type rateShard struct {
	mu sync.Mutex
	m  map[rateKey]*Rate
}

// New returns a manager over w that reads the quotas from index.
func New(w Window, index func() *quota.Index) *Manager {
	m := &Manager{w: w.normalized(), index: index, seed: maphash.MakeSeed()}
	for i := range m.clients {
		m.clients[i].m = map[clientKey]*client{}
		m.rates[i].m = map[rateKey]*Rate{}
	}
	return m
}

// Window is the manager's quota window.
func (m *Manager) Window() Window { return m.w }

// Limited reports whether any entity sets a quota on k; when none does,
// Record on k returns 0 at once.
func (m *Manager) Limited(k quota.Key) bool { return m.index().Has(k) }

// Record adds v to the rate of the quota entity that a client with user
// name user and client id clientID maps to for k, and returns the throttle
// time the client has earned (0 when within its quota or without one).
func (m *Manager) Record(k quota.Key, user, clientID string, v float64, now time.Time) time.Duration {
	x := m.index()
	if !x.Has(k) {
		return 0
	}
	c := m.client(x, user, clientID)
	if c.limit[k] == 0 {
		return 0
	}
	r := c.rate[k]
	if r == nil {
		r = NewRate(m.w) // not remembered: the table is full
	}
	rate, span := r.Record(now, v)
	d := ThrottleTime(rate, c.limit[k], span)
	if d > 0 {
		m.throttled[k].Add(1)
		m.throttleMs[k].Add(d.Milliseconds())
	}
	return d
}

// Stats are the throttled responses and the throttle time given, by key.
func (m *Manager) Stats(k quota.Key) (throttled, throttleMs int64) {
	return m.throttled[k].Load(), m.throttleMs[k].Load()
}

func (m *Manager) shard(user, clientID string) int {
	h := maphash.String(m.seed, user) ^ (maphash.String(m.seed, clientID) * 0x9e3779b97f4a7c15)
	return int(h % shards)
}

// client returns the cached resolution of a client under x, resolving it
// again when the quotas changed.
func (m *Manager) client(x *quota.Index, user, clientID string) *client {
	sh := &m.clients[m.shard(user, clientID)]
	sh.mu.RLock()
	c := sh.m[clientKey{user, clientID}]
	sh.mu.RUnlock()
	if c != nil && c.index == x {
		return c
	}
	nc := &client{index: x}
	for k := range quota.NumKeys {
		if match, ok := x.Resolve(k, user, clientID); ok {
			nc.limit[k] = match.Limit
			nc.rate[k] = m.rate(rateKey{k, match.User, match.ClientID})
		}
	}
	if c == nil && m.count.Load() >= maxClients {
		m.Sweep(time.Now().Add(-m.span()))
		if m.count.Load() >= maxClients {
			return nc
		}
	}
	sh.mu.Lock()
	if _, had := sh.m[clientKey{user, clientID}]; !had {
		m.count.Add(1)
	}
	sh.m[clientKey{user, clientID}] = nc
	sh.mu.Unlock()
	return nc
}

// rate returns the shared rate of a quota entity, creating it.
func (m *Manager) rate(k rateKey) *Rate {
	sh := &m.rates[m.shard(k.user, k.client)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r := sh.m[k]
	if r == nil {
		if len(sh.m) >= maxClients/shards {
			return nil
		}
		r = NewRate(m.w)
		sh.m[k] = r
	}
	return r
}

// span is the whole window: a rate idle longer holds nothing.
func (m *Manager) span() time.Duration { return time.Duration(m.w.Samples) * m.w.Size }

// Sweep forgets the rates nothing was recorded in since before, and the
// clients that use none of the rates left. Call it now and then (Run).
func (m *Manager) Sweep(before time.Time) {
	t := before.UnixNano()
	live := map[*Rate]bool{}
	for i := range m.rates {
		sh := &m.rates[i]
		sh.mu.Lock()
		for k, r := range sh.m {
			if r.idleSince(t) {
				delete(sh.m, k)
			} else {
				live[r] = true
			}
		}
		sh.mu.Unlock()
	}
	for i := range m.clients {
		sh := &m.clients[i]
		sh.mu.Lock()
		for k, c := range sh.m {
			keep := false
			for _, r := range c.rate {
				keep = keep || (r != nil && live[r])
			}
			if !keep {
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
