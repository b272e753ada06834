package raftstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/log"
)

// Background verification. A partition log trusts at Open what it flushed
// before (log/verify.go): those batches are unverified until their CRCs
// are checked, which any read does first. After the store opens, one
// goroutine checks them all, throttled to Config.VerifyBytesPerSec so that
// it does not take the disk from the broker, and then reports the store
// verified (Verified). Until then a node that leads a group of several
// voters hands leadership off: it must not lead with data it has not
// checked. Damage found, by this goroutine or by a read, stops the node
// (damage.go).

// DefaultVerifyBytesPerSec is the default pace of background verification.
const DefaultVerifyBytesPerSec = 64 << 20

// A leader with unverified data hands leadership off at once, and again
// at most once per verifyHandOffEvery while it keeps winning elections
// (every node of a cluster restarted at once has unverified data: the
// group must still elect someone, and the lazy check still guards what is
// served). verifyPoll is how often the leadership is looked at.
const (
	verifyHandOffEvery = 10 * time.Second
	verifyPoll         = 250 * time.Millisecond
)

// Verified reports whether background verification has checked every
// partition log's batches that the node trusted at start.
func (s *Store) Verified() bool { return s.verified.Load() }

// VerifyStats sums the partition logs' verification counters (bytes and
// segments CRC-checked since start, segments found damaged).
func (s *Store) VerifyStats() log.VerifyStats {
	var sum log.VerifyStats
	for _, l := range s.fsm.logs() {
		st := l.VerifyStats()
		sum.Segments += st.Segments
		sum.Bytes += st.Bytes
		sum.Damaged += st.Damaged
	}
	return sum
}

// logs returns every open partition log.
func (f *fsm) logs() []*log.Log {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []*log.Log
	for _, ts := range f.topics {
		for _, p := range ts.parts {
			out = append(out, p.log)
		}
	}
	return out
}

// startVerify starts background verification and the leadership hand-off
// that lasts until it completes.
func (s *Store) startVerify() {
	s.verifiedCh = make(chan struct{})
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.verifyLogs()
	}()
	go func() {
		defer s.wg.Done()
		s.handOffUnverified()
	}()
}

// verifyLogs verifies every partition log, then marks the store verified.
// It goes round again while logs with unverified data remain (a snapshot
// installed meanwhile opens new ones). Damage stops it: the log's damage
// handler has reported it, and the node stops.
func (s *Store) verifyLogs() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	began := time.Now()
	pace := newVerifyPacer(s.cfg.VerifyBytesPerSec)
	var total log.VerifyStats
	logs := 0
	for {
		var todo []*log.Log
		for _, l := range s.fsm.logs() {
			if l.Unverified() > 0 {
				todo = append(todo, l)
			}
		}
		if len(todo) == 0 {
			break
		}
		for _, l := range todo {
			before := l.VerifyStats()
			err := l.VerifyAll(ctx, pace.pace)
			after := l.VerifyStats()
			total.Bytes += after.Bytes - before.Bytes
			total.Segments += after.Segments - before.Segments
			logs++
			switch {
			case err == nil, errors.Is(err, log.ErrClosed): // deleted meanwhile
			case errors.Is(err, log.ErrDamaged):
				return // reported by the log's damage handler
			case ctx.Err() != nil:
				return
			default:
				s.fsm.markFailed(fmt.Errorf("%w: verify partition log %s: %w", ErrStorage, l.Dir(), err))
				return
			}
		}
	}
	took := time.Since(began)
	s.verified.Store(true)
	close(s.verifiedCh)
	s.logger.Info("verification complete: every batch trusted at start has its CRC checked",
		"partitions", logs, "segments", total.Segments, "bytes", total.Bytes, "took", took.Round(time.Millisecond),
		"mib_per_sec", fmt.Sprintf("%.1f", float64(total.Bytes)/(1<<20)/max(took.Seconds(), 1e-6)))
}

// handOffUnverified hands raft leadership off while this node leads a
// group of several voters with its data not yet verified.
func (s *Store) handOffUnverified() {
	t := time.NewTicker(verifyPoll)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-s.verifiedCh:
			return
		case now := <-t.C:
			if s.raft.State() != raft.Leader || s.voters() < 2 || now.Sub(last) < verifyHandOffEvery {
				continue
			}
			last = now
			s.logger.Warn("handing raft leadership to another node: this node has not finished verifying its data since it started")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.TransferLeadership(ctx); err != nil {
				s.logger.Warn("leadership hand-off failed", "err", err)
			}
			cancel()
		}
	}
}

// verifyPacer paces verification reads to a rate in bytes per second
// (none if the rate is negative): next is when the bytes read so far are
// due. Time it was not asked to wait for (a read that verified a segment
// itself, a pause between logs) is saved up to a second's worth at most.
type verifyPacer struct {
	rate float64
	next time.Time
}

func newVerifyPacer(rate int64) *verifyPacer {
	if rate == 0 {
		rate = DefaultVerifyBytesPerSec
	}
	return &verifyPacer{rate: float64(rate), next: time.Now()}
}

func (p *verifyPacer) pace(ctx context.Context, n int64) error {
	if p.rate < 0 {
		return ctx.Err()
	}
	now := time.Now()
	if floor := now.Add(-time.Second); p.next.Before(floor) {
		p.next = floor
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	wait := p.next.Sub(now)
	if wait <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
