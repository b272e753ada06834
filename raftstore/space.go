package raftstore

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A full disk must not take the node down, and must not leave it down
// once space is back. The guard keeps a reserve of free space on the data
// directory's filesystem: below it, commands that grow the data (produce,
// processor steps, new topics and partitions) are refused at once with
// ErrStorage, before they reach raft, so that the node's own writes do
// not fill the disk. The reserve covers what is already on its way: raft's
// next log segments and the entries being applied. Writes inside the node
// that still meet a full disk (someone else filled it) wait for space
// rather than fail (see nospace.go); while they wait, the guard refuses
// too. Either way the node serves again by itself once space is freed.

// spacePollInterval is how often the guard samples free space.
const spacePollInterval = 500 * time.Millisecond

// Auto reserve: a twentieth of the filesystem, at least two raft-wal
// segments (the next one is allocated whole), at most maxAutoReserve.
const (
	reserveDiskShare = 20
	maxAutoReserve   = 5 << 30
)

// reserveFor is the reserve to keep: configured if positive, else sized
// from the filesystem's total bytes and raft-wal's segment size.
func reserveFor(configured int64, total uint64, walSegment int) uint64 {
	if configured > 0 {
		return uint64(configured)
	}
	return max(min(total/reserveDiskShare, maxAutoReserve), 2*uint64(walSegment))
}

type spaceGuard struct {
	dir     string
	reserve uint64
	logger  *slog.Logger
	mu      sync.Mutex
	// sample reads the filesystem's free bytes (filesystemSpace; tests
	// replace it).
	sample  func() (avail uint64, ok bool)
	avail   uint64
	low     bool             // avail was below the reserve at the last sample
	waiting map[string]error // writes waiting for space, by what waits
	reason  error            // nil when writes are accepted
	causes  string           // what reason was made of, for logging changes only

	refused atomic.Uint64
}

func newSpaceGuard(dir string, reserve uint64, logger *slog.Logger) *spaceGuard {
	g := &spaceGuard{dir: dir, reserve: reserve, logger: logger, waiting: map[string]error{}}
	g.sample = func() (uint64, bool) {
		_, avail, ok := filesystemSpace(dir)
		return avail, ok
	}
	g.poll()
	return g
}

// A leader that has refused writes for spaceHandOff hands leadership to
// another voter, which may have room (Kafka moves the leadership of a
// failed log directory's partitions the same way); at most once per
// spaceHandOffEvery, so that a cluster whose disks are all full does not
// spin elections.
const (
	spaceHandOff      = 2 * time.Second
	spaceHandOffEvery = 30 * time.Second
)

// watchSpace samples free space until the store closes, and hands
// leadership off while this node's disk is full.
func (s *Store) watchSpace() {
	g := s.fsm.space
	t := time.NewTicker(spacePollInterval)
	defer t.Stop()
	var since, handedOff time.Time
	var handing atomic.Bool
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if s.wal != nil {
				// A failed raft log write is repaired once there is room,
				// even if raft has nothing to write.
				s.wal.repair()
			}
			g.poll()
			err := g.err()
			if err == nil {
				since = time.Time{}
				continue
			}
			if since.IsZero() {
				since = now
			}
			if now.Sub(since) < spaceHandOff || now.Sub(handedOff) < spaceHandOffEvery || handing.Load() || !s.IsLeader() || s.voters() < 2 {
				continue
			}
			handedOff = now
			handing.Store(true)
			s.logger.Warn("handing raft leadership to another node: this node's disk is full", "err", err)
			s.wg.Add(1)
			go func() {
				// Sampling goes on meanwhile.
				defer s.wg.Done()
				defer handing.Store(false)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := s.TransferLeadership(ctx); err != nil {
					s.logger.Warn("leadership hand-off failed", "err", err)
				}
			}()
		}
	}
}

// poll samples free space now.
func (g *spaceGuard) poll() {
	g.mu.Lock()
	sample := g.sample
	g.mu.Unlock()
	avail, ok := sample()
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.avail = avail
	g.low = avail < g.reserve
	g.updateLocked()
}

// wait records that a write inside the node (what) failed for lack of
// space and waits to be retried; done clears it.
func (g *spaceGuard) wait(what string, err error) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.waiting[what]; ok {
		return
	}
	g.waiting[what] = err
	g.updateLocked()
}

func (g *spaceGuard) done(what string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.waiting[what]; !ok {
		return
	}
	delete(g.waiting, what)
	g.updateLocked()
}

// updateLocked recomputes the reason writes are refused, and logs each
// change.
func (g *spaceGuard) updateLocked() {
	var parts []string
	causes := fmt.Sprint(g.low, slices.Sorted(maps.Keys(g.waiting)))
	if g.low {
		parts = append(parts, fmt.Sprintf("the data directory's disk has %d bytes free, below the reserve of %d (brokerd.storage.min.free.bytes)", g.avail, g.reserve))
	}
	for _, what := range slices.Sorted(maps.Keys(g.waiting)) {
		parts = append(parts, fmt.Sprintf("%s waits for disk space: %v", what, g.waiting[what]))
	}
	was := g.reason
	// Logged when the causes change, not when only the numbers do.
	changed := causes != g.causes
	g.causes = causes
	if len(parts) == 0 {
		g.reason = nil
		if was != nil {
			g.logger.Info("disk space is back: accepting writes again", "free_bytes", g.avail, "reserve_bytes", g.reserve)
		}
		return
	}
	g.reason = fmt.Errorf("%w: %s; free space in %s, and writes resume by themselves", ErrStorage, strings.Join(parts, "; "), g.dir)
	if changed {
		g.logger.Error("refusing writes: disk full", "err", g.reason)
	}
}

// err is why writes are refused now, or nil.
func (g *spaceGuard) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason
}

// admit returns err() and counts a refusal.
func (g *spaceGuard) admit() error {
	err := g.err()
	if err != nil {
		g.refused.Add(1)
	}
	return err
}

// StorageStats is the state of the data directory's free space.
type StorageStats struct {
	// FreeBytes is what the filesystem had free at the last sample;
	// ReserveBytes is brokerd.storage.min.free.bytes as applied.
	FreeBytes, ReserveBytes uint64
	// Refusing is true while writes are refused; Refused counts the
	// commands refused since the store opened.
	Refusing bool
	Refused  uint64
}

func (g *spaceGuard) stats() StorageStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return StorageStats{FreeBytes: g.avail, ReserveBytes: g.reserve, Refusing: g.reason != nil, Refused: g.refused.Load()}
}

// admitWrite refuses, with ErrStorage, a command that would grow the data
// while the disk is full.
func (s *Store) admitWrite() error { return s.fsm.space.admit() }

// StorageErr says why writes are refused now (a full disk), or nil. Its
// text names the cause and what to do.
func (s *Store) StorageErr() error { return s.fsm.space.err() }

// StorageStats reports the data directory's free space and the writes
// refused for lack of it.
func (s *Store) StorageStats() StorageStats { return s.fsm.space.stats() }
