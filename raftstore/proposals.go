package raftstore

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
	"golang.org/x/sync/semaphore"
)

// The bytes of commands handed to raft and not yet applied are bounded.
// raft takes what is queued, up to maxAppendEntries entries, into one write
// of its log, and raft-wal keeps a buffer as large as the largest write it
// ever made, for good: unbounded, 64 entries of 4 MiB grew a 256 MiB buffer
// that no budget counted, and a broker in a 512 MiB container was
// OOM-killed under load. Producers wait for room instead: throttled, not
// failed. The wait happens in the connection's request order, so a
// producer's pipelined requests wait behind each other.

// DefaultProposalBytes is the bound when Config.MaxProposalBytes is 0.
const DefaultProposalBytes = 32 << 20

type proposals struct {
	sem  *semaphore.Weighted
	size int64
}

func newProposals(size int64) *proposals {
	if size <= 0 {
		size = DefaultProposalBytes
	}
	return &proposals{sem: semaphore.NewWeighted(size), size: size}
}

// acquire waits until n more bytes may be proposed, or ctx ends. A command
// larger than the whole bound waits until nothing else is in flight. It
// returns what was taken, for releaseAfter.
func (p *proposals) acquire(ctx context.Context, n int) (int64, error) {
	w := min(max(int64(n), 1), p.size)
	if err := p.sem.Acquire(ctx, w); err != nil {
		return 0, fmt.Errorf("%w: waiting for room among the commands in flight: %v", ErrUnknownOutcome, err)
	}
	return w, nil
}

// watchedFuture is a raft future whose Error one goroutine of its own
// waits for, returning the proposal's bytes as soon as it is done. raft's
// futures are not safe to wait on from two goroutines at once (Error
// caches its result unguarded), so every waiter waits on done instead.
type watchedFuture struct {
	raft.ApplyFuture
	done chan struct{}
	err  error
}

// Error waits until the future is done and returns its error.
func (f *watchedFuture) Error() error {
	<-f.done
	return f.err
}

// proposeBounded hands data to raft once there is room for it, and
// returns the future; the room is given back when the future is done
// (applied, or failed).
func (s *Store) proposeBounded(ctx context.Context, data []byte) (raft.ApplyFuture, error) {
	w, err := s.props.acquire(ctx, len(data))
	if err != nil {
		return nil, err
	}
	f := &watchedFuture{ApplyFuture: s.raft.Apply(data, s.cfg.ApplyTimeout), done: make(chan struct{})}
	go func() {
		f.err = f.ApplyFuture.Error()
		s.props.sem.Release(w)
		close(f.done)
	}()
	return f, nil
}

// stopContext is a context that ends when the store closes.
func (s *Store) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
