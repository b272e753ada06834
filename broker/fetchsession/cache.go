package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Kafka's session metadata: an id of 0 is no session; epoch 0 starts a
// full session, -1 is a full fetch with no session.
const (
	invalidSessionID int32 = 0
	initialEpoch     int32 = 0
	finalEpoch       int32 = -1
)

// Defaults, as Kafka has them.
const (
	// DefaultSlots is max.incremental.fetch.session.cache.slots.
	DefaultSlots = 1000
	// DefaultEvictAfter is Kafka's min.incremental.fetch.session.eviction.ms:
	// a session unused this long may be evicted by any new one, and a
	// session younger than this is not evicted for a larger one.
	DefaultEvictAfter = 2 * time.Minute
	// DefaultMaxSessionPartitions bounds one session. Kafka has no bound;
	// brokerd has one so that a client adding partitions to its session
	// request after request cannot grow the cache without limit. A larger
	// fetch is still served, without a session.
	DefaultMaxSessionPartitions = 100_000
	// DefaultMaxCachedBytes bounds the memory all sessions together hold
	// (an estimate: partitionCost per cached partition).
	DefaultMaxCachedBytes = 128 << 20
)

// Config sizes a Cache. Zero fields take the defaults above; Slots < 0
// disables sessions (every fetch is answered without one).
type Config struct {
	Slots                int
	EvictAfter           time.Duration
	MaxSessionPartitions int
	MaxCachedBytes       int64
}

// Cache is one node's fetch sessions. It is safe for concurrent use.
//
// Locking: the cache's mu guards the session map and the totals and is
// held only for O(1) work or a scan of the sessions (at most Slots); each
// session's own mu guards its partitions. A goroutine holding a session's
// mu may take the cache's mu, never the other way round.
type Cache struct {
	cfg Config

	mu        sync.Mutex
	sessions  map[int32]*session
	parts     int   // countedParts over all sessions
	bytes     int64 // countedBytes over all sessions
	evictions int64
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	switch {
	case cfg.Slots == 0:
		cfg.Slots = DefaultSlots
	case cfg.Slots < 0:
		cfg.Slots = 0
	}
	if cfg.EvictAfter <= 0 {
		cfg.EvictAfter = DefaultEvictAfter
	}
	if cfg.MaxSessionPartitions <= 0 {
		cfg.MaxSessionPartitions = DefaultMaxSessionPartitions
	}
	if cfg.MaxCachedBytes <= 0 {
		cfg.MaxCachedBytes = DefaultMaxCachedBytes
	}
	return &Cache{cfg: cfg, sessions: map[int32]*session{}}
}

// Stats is what the cache holds now, for metrics.
type Stats struct {
	Sessions   int
	Partitions int
	Bytes      int64
	Evictions  int64
}

// Stats reports the cache's size and evictions so far.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.parts, Bytes: c.bytes, Evictions: c.evictions}
}

// Request is the session part of a Fetch request.
type Request struct {
	Version   int16
	SessionID int32
	Epoch     int32
	// Partitions are the partitions the request names, in its order.
	Partitions []Partition
	// Forgotten are the partitions an incremental request drops.
	Forgotten []Key
}

type kind int8

const (
	sessionless kind = iota // answer everything, no session
	full                    // answer everything, then try to open a session
	incremental             // answer what changed in an existing session
	failed                  // answer only a top-level error
)

// Context is one Fetch request's view of its session: which partitions to
// read, and (Finish) which of them to answer and under which session id.
type Context struct {
	c     *Cache
	kind  kind
	err   int16
	parts []Partition
	// incremental: the session and the epoch it must still have.
	sess     *session
	expected int32
	usesIDs  bool
}

// NewContext applies a Fetch request to the cache as Kafka's FetchManager
// does. Epoch 0 and -1 are full fetches: any session the request names is
// closed, and epoch 0 asks for a new one. A positive epoch is an
// incremental fetch in an existing session: its partitions are added or
// updated, its forgotten partitions dropped, and the epoch advanced.
func (c *Cache) NewContext(r Request, now time.Time) *Context {
	usesIDs := r.Version >= 13
	if r.Version < 7 {
		// No session fields before v7.
		return &Context{c: c, kind: sessionless, parts: dedupe(r.Partitions)}
	}
	if r.Epoch == initialEpoch || r.Epoch == finalEpoch {
		if r.SessionID != invalidSessionID {
			c.mu.Lock()
			if s, ok := c.sessions[r.SessionID]; ok {
				c.removeLocked(s)
			}
			c.mu.Unlock()
		}
		k := full
		if r.Epoch == finalEpoch || c.cfg.Slots == 0 {
			k = sessionless
		}
		return &Context{c: c, kind: k, parts: dedupe(r.Partitions), usesIDs: usesIDs}
	}
	c.mu.Lock()
	s, ok := c.sessions[r.SessionID]
	if ok {
		s.used = now
	}
	c.mu.Unlock()
	if !ok {
		return &Context{c: c, kind: failed, err: errSessionNotFound}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != r.Epoch:
		return &Context{c: c, kind: failed, err: errInvalidEpoch}
	case s.usesIDs != usesIDs:
		return &Context{c: c, kind: failed, err: errTopicIDs}
	}
	for _, p := range r.Partitions {
		s.add(p)
	}
	for _, k := range r.Forgotten {
		s.forget(k)
	}
	switch {
	case s.size() == 0:
		// Nothing left to track: the session ends and this fetch is
		// answered without one.
		c.drop(s)
		return &Context{c: c, kind: sessionless, parts: dedupe(r.Partitions), usesIDs: usesIDs}
	case s.size() > c.cfg.MaxSessionPartitions || !c.recount(s):
		// Over brokerd's bounds: drop the session; the client's next full
		// fetch is served without one.
		c.drop(s)
		return &Context{c: c, kind: failed, err: errSessionNotFound}
	}
	s.epoch = nextEpoch(s.epoch)
	return &Context{c: c, kind: incremental, parts: s.partitions(), sess: s, expected: s.epoch, usesIDs: usesIDs}
}

// dedupe keeps the first position and the last parameters of a partition
// named twice, as Kafka's map of requested partitions does.
func dedupe(parts []Partition) []Partition {
	if len(parts) < 2 {
		return parts
	}
	at := make(map[Key]int, len(parts))
	var out []Partition
	for i, p := range parts {
		j, dup := at[p.Key]
		if !dup {
			at[p.Key] = len(at)
			if out != nil {
				out = append(out, p)
			}
			continue
		}
		if out == nil {
			out = append([]Partition(nil), parts[:i]...)
		}
		out[j] = p
	}
	if out == nil {
		return parts
	}
	return out
}

// Err is a top-level error code for the whole request (a session that is
// unknown, at another epoch, or of the other topic naming). The response
// then carries no partitions and session id 0.
func (x *Context) Err() int16 {
	if x.kind == failed {
		return x.err
	}
	return 0
}

// Partitions are the partitions to read, in order.
func (x *Context) Partitions() []Partition { return x.parts }

// Finish takes what was read for each of Partitions (same order) and
// decides the response: keep[i] says whether partition i goes into it,
// sessionID is the response's session id, and code a top-level error (an
// incremental session that another request moved on meanwhile). A full
// fetch opens its session here, if the cache has or can make room.
func (x *Context) Finish(results []Result, now time.Time) (keep []bool, sessionID int32, code int16) {
	keep = make([]bool, len(x.parts))
	switch x.kind {
	case failed:
		return keep, invalidSessionID, x.err
	case sessionless:
		all(keep)
		return keep, invalidSessionID, 0
	case full:
		all(keep)
		return keep, x.c.create(x.parts, results, x.usesIDs, now), 0
	}
	s := x.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != x.expected {
		// Another request in this session got here first (a duplicate
		// or a client not waiting for its answer).
		return keep, s.id, errInvalidEpoch
	}
	var moved []*cachedPartition
	for i, p := range x.parts {
		e, ok := s.parts[p.Key]
		if !ok {
			continue
		}
		cp := e.Value.(*cachedPartition)
		if keep[i] = cp.mustRespond(results[i], true); keep[i] && results[i].RecordBytes > 0 {
			s.order.Remove(e)
			moved = append(moved, cp)
		}
	}
	for _, cp := range moved {
		s.parts[cp.Key] = s.order.PushBack(cp)
	}
	return keep, s.id, 0
}

func all(keep []bool) {
	for i := range keep {
		keep[i] = true
	}
}

// create opens a session for a full fetch that has been answered; 0 when
// the cache has no room for it. The session is built before the cache's
// lock is taken.
func (c *Cache) create(parts []Partition, results []Result, usesIDs bool, now time.Time) int32 {
	if len(parts) == 0 || len(parts) > c.cfg.MaxSessionPartitions {
		return invalidSessionID
	}
	s := newSession(usesIDs, now)
	for i, p := range parts {
		s.add(p)
		cp := s.parts[p.Key].Value.(*cachedPartition)
		cp.highWatermark, cp.logStartOffset = results[i].HighWatermark, results[i].LogStartOffset
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	full := func() bool {
		return len(c.sessions) >= c.cfg.Slots || c.bytes+s.bytes > c.cfg.MaxCachedBytes
	}
	// As in Kafka, a new session evicts at most one other.
	if full() && (!c.evictFor(s.size(), now) || full()) {
		return invalidSessionID
	}
	for {
		id := rand.Int32()
		if _, taken := c.sessions[id]; id != invalidSessionID && !taken {
			s.id = id
			break
		}
	}
	c.sessions[s.id] = s
	s.countedActive, s.countedParts, s.countedBytes = true, s.size(), s.bytes
	c.parts += s.countedParts
	c.bytes += s.countedBytes
	return s.id
}

// evictFor makes room for a new session of size partitions as Kafka's
// FetchSessionCache does: the least recently used session if it has been
// idle longer than EvictAfter; otherwise the smallest session older than
// EvictAfter, if it is smaller than the new one. The caller holds c.mu.
func (c *Cache) evictFor(size int, now time.Time) bool {
	var lru, small *session
	for _, s := range c.sessions {
		if lru == nil || s.used.Before(lru.used) || s.used.Equal(lru.used) && s.id < lru.id {
			lru = s
		}
		if now.Sub(s.created) > c.cfg.EvictAfter {
			if small == nil || s.countedParts < small.countedParts || s.countedParts == small.countedParts && s.id < small.id {
				small = s
			}
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.used) > c.cfg.EvictAfter:
		c.removeLocked(lru)
	case small != nil && size > small.countedParts:
		c.removeLocked(small)
	default:
		return false
	}
	c.evictions++
	return true
}

// recount updates what a session (whose mu the caller holds) is counted
// for, and reports whether the cache is still within its memory bound.
func (c *Cache) recount(s *session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !s.countedActive {
		return true
	}
	c.parts += s.size() - s.countedParts
	c.bytes += s.bytes - s.countedBytes
	s.countedParts, s.countedBytes = s.size(), s.bytes
	return c.bytes <= c.cfg.MaxCachedBytes
}

// drop removes a session (whose mu the caller may hold).
func (c *Cache) drop(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(s)
}

// removeLocked drops a session; the caller holds c.mu.
func (c *Cache) removeLocked(s *session) {
	if !s.countedActive {
		return
	}
	delete(c.sessions, s.id)
	c.parts -= s.countedParts
	c.bytes -= s.countedBytes
	s.countedActive = false
}
