package fetchsession

import (
	"testing"
	"time"
)

// FuzzCache drives the cache with an arbitrary sequence of fetches (full,
// sessionless, incremental with adds and forgets, stale epochs, concurrent
// contexts, clock jumps) and checks its invariants after each step: the
// partition count matches the sessions, the bounds hold, every context
// answers one decision per partition, and no session is reachable under an
// id it does not have.
func FuzzCache(f *testing.F) {
	f.Add([]byte{0, 3, 1, 0, 2, 1, 1, 4, 0})
	f.Add([]byte{0, 9, 0, 9, 0, 9, 5, 200, 0, 1, 2, 3, 3, 3})
	f.Add([]byte{0, 1, 2, 0, 1, 3, 0, 7, 4, 1, 1, 1, 6, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		c := New(Config{Slots: 3, EvictAfter: time.Minute, MaxSessionPartitions: 6, MaxCachedBytes: 10 * 201})
		now := t0
		var ids []int32
		epochs := map[int32]int32{}
		var pending []*Context
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		parts := func(n byte) []Partition {
			var out []Partition
			for i := byte(0); i < n%8; i++ {
				out = append(out, part(string('a'+rune(next()%3)), int32(next()%4), int64(next())))
			}
			return out
		}
		for len(ops) > 0 {
			switch next() % 8 {
			case 0: // full fetch, epoch 0
				x := c.NewContext(Request{Version: 12, Epoch: 0, Partitions: parts(next())}, now)
				res := make([]Result, len(x.Partitions()))
				_, id, _ := x.Finish(res, now)
				if id != 0 {
					ids = append(ids, id)
					epochs[id] = 1
				}
			case 1: // sessionless
				x := c.NewContext(Request{Version: 11, SessionID: -1, Epoch: -1, Partitions: parts(next())}, now)
				if _, id, code := x.Finish(make([]Result, len(x.Partitions())), now); id != 0 || code != 0 {
					t.Fatalf("sessionless fetch: id %d code %d", id, code)
				}
			case 2, 3: // incremental, at the right epoch or a wrong one
				if len(ids) == 0 {
					continue
				}
				id := ids[int(next())%len(ids)]
				ep := epochs[id]
				if next()%4 == 0 {
					ep += int32(next()%3) - 1
				}
				var forget []Key
				for _, p := range parts(next()) {
					forget = append(forget, p.Key)
				}
				x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: ep, Partitions: parts(next()), Forgotten: forget}, now)
				if x.Err() == 0 && x.kind == incremental {
					epochs[id] = nextEpoch(ep)
				}
				if next()%3 == 0 {
					pending = append(pending, x)
					continue
				}
				finish(t, x, now, next())
			case 4: // finish a context held back
				if len(pending) > 0 {
					finish(t, pending[0], now, next())
					pending = pending[1:]
				}
			case 5: // the clock moves
				now = now.Add(time.Duration(next()) * time.Second)
			case 6: // full fetch closing a named session
				if len(ids) > 0 {
					id := ids[int(next())%len(ids)]
					x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: -1, Partitions: parts(next())}, now)
					finish(t, x, now, 0)
				}
			case 7:
				c.NewContext(Request{Version: 13, SessionID: int32(next()), Epoch: int32(next()) - 128}, now)
			}
			check(t, c)
		}
	})
}

func finish(t *testing.T, x *Context, now time.Time, b byte) {
	res := make([]Result, len(x.Partitions()))
	for i := range res {
		res[i] = Result{HighWatermark: int64(b % 5), RecordBytes: int(b % 3), ErrorCode: int16(b%7) / 6}
	}
	keep, _, _ := x.Finish(res, now)
	if len(keep) != len(x.Partitions()) {
		t.Fatalf("%d decisions for %d partitions", len(keep), len(x.Partitions()))
	}
}

func check(t *testing.T, c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, b := 0, int64(0)
	for id, s := range c.sessions {
		s.mu.Lock()
		if s.id != id || id == 0 || !s.countedActive {
			t.Fatalf("session %d filed under %d", s.id, id)
		}
		if s.order.Len() != len(s.parts) || s.size() == 0 || s.size() > c.cfg.MaxSessionPartitions {
			t.Fatalf("session %d: %d in order, %d in map", id, s.order.Len(), len(s.parts))
		}
		var cost int64
		for e := s.order.Front(); e != nil; e = e.Next() {
			k := e.Value.(*cachedPartition).Key
			if s.parts[k] != e {
				t.Fatalf("session %d: order and map disagree", id)
			}
			cost += partitionCost(k)
		}
		if cost != s.bytes || s.countedParts != s.size() || s.countedBytes != s.bytes {
			t.Fatalf("session %d: counted %d/%d, holds %d/%d (cost %d)", id, s.countedParts, s.countedBytes, s.size(), s.bytes, cost)
		}
		n += s.countedParts
		b += s.countedBytes
		s.mu.Unlock()
	}
	if n != c.parts || b != c.bytes {
		t.Fatalf("cache counts %d/%d, sessions hold %d/%d", c.parts, c.bytes, n, b)
	}
	if len(c.sessions) > c.cfg.Slots || c.bytes > c.cfg.MaxCachedBytes {
		t.Fatalf("%d sessions, %d bytes: over the bounds", len(c.sessions), c.bytes)
	}
}
