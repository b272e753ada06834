package log

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
)

// Verification. Open trusts what lies below the recovery point: it reads
// only a few headers of those segments, so a bit flipped in them after
// they were flushed (a failing disk, a stray write) goes unnoticed there.
// Such bytes are unverified until their CRCs have been checked once in
// this process: every batch of a segment that Open trusted, and the
// batches below the recovery point of the segment that holds it. What
// this process writes, and what Open scanned with CRCs, is verified.
//
// No read serves bytes of an unverified batch: Read, ReadWith and
// ReadRange verify a segment whole before they serve anything from its
// unverified part (one pass per segment per process; the first reader
// scans while the others wait for it). VerifyAll does the same for every
// segment of the log, in the background. A batch whose CRC or framing
// fails is damage: ErrDamaged, returned by every read that reaches the
// segment from then on, and reported once to the damage handler
// (SetDamageHandler). The timestamp searches (OffsetForTimestamp,
// MaxTimestampOffset) do not verify: they answer with offsets, never
// with record bytes, and the read that follows them does.

// Pace throttles VerifyAll: it is called with the bytes just checked and
// returns once the next may be read, or with ctx's error.
type Pace func(ctx context.Context, n int64) error

// paceChunk is how many bytes VerifyAll checks between calls to its Pace.
const paceChunk = 1 << 20

// VerifyStats counts a log's verification work since Open.
type VerifyStats struct {
	Segments int64 // segments verified
	Bytes    int64 // bytes CRC-checked (a pass cut short counts its bytes too)
	Damaged  int64 // segments found damaged
}

type verifyCounters struct {
	segments, bytes, damaged atomic.Int64
}

// VerifyStats returns the log's verification counters.
func (l *Log) VerifyStats() VerifyStats {
	return VerifyStats{
		Segments: l.verified.segments.Load(),
		Bytes:    l.verified.bytes.Load(),
		Damaged:  l.verified.damaged.Load(),
	}
}

// SetDamageHandler has f called with the error (matching ErrDamaged)
// when verification finds a damaged segment, once per segment, before
// the read or VerifyAll that found it returns. f must not call back into
// the log's reads. nil removes the handler.
func (l *Log) SetDamageHandler(f func(error)) {
	if f == nil {
		l.onDamage.Store(nil)
		return
	}
	l.onDamage.Store(&f)
}

// Unverified returns the bytes of the segments that hold unverified
// batches (their whole size).
func (l *Log) Unverified() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		if s.unverified(s.base) {
			n += s.size.Load()
		}
	}
	return n
}

// VerifyAll verifies every segment that holds unverified batches, oldest
// first, calling pace (if not nil) between chunks of its reads. While a
// read waits for the segment it is verifying, it does not pace. It
// returns the ErrDamaged error of the first damaged segment, ctx's error,
// a read error, or ErrClosed.
func (l *Log) VerifyAll(ctx context.Context, pace Pace) error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	segs := slices.Clone(l.segs)
	l.mu.RUnlock()
	for _, s := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.verify(ctx, s, pace); err != nil {
			return err
		}
	}
	if l.isClosed() {
		return ErrClosed
	}
	return nil
}

// unverified reports whether a read from offset from of s, on, would
// serve unverified bytes.
func (s *segment) unverified(from int64) bool { return from < s.unverifiedEnd.Load() }

// rewritten records that the batches of s at or past off are gone, and
// the bytes there will be rewritten by this process (Truncate).
func (s *segment) rewritten(off int64) {
	for {
		cur := s.unverifiedEnd.Load()
		if cur <= off || s.unverifiedEnd.CompareAndSwap(cur, off) {
			return
		}
	}
}

// verify checks the CRCs of s's unverified batches, once: a caller that
// finds another verifying s waits for it. pace nil means a read waits;
// VerifyAll stops pacing while one does. A segment its log has dropped
// meanwhile needs no verification (nothing reads it again).
func (l *Log) verify(ctx context.Context, s *segment, pace Pace) error {
	if !s.unverified(s.base) {
		return nil
	}
	if pace == nil {
		s.verifyWaiters.Add(1)
		defer s.verifyWaiters.Add(-1)
	}
	s.verifyMu.Lock()
	defer s.verifyMu.Unlock()
	if s.damage != nil {
		return s.damage
	}
	if !s.unverified(s.base) {
		return nil
	}
	if err := l.cache.acquire(s); err != nil {
		if errors.Is(err, errSegmentGone) {
			return nil
		}
		return fmt.Errorf("verify %s: %w", s.path, err)
	}
	defer l.cache.release(s)
	for {
		// A Truncate raises rewrites before it changes a byte: if it has
		// not moved by the time the pass fails, the pass read bytes that
		// nothing rewrote.
		gen := l.rewrites.Load()
		n, bad, err := s.checkBelow(ctx, s.unverifiedEnd.Load(), pace)
		l.verified.bytes.Add(n)
		if err == nil && bad == nil {
			s.unverifiedEnd.Store(s.base)
			l.verified.segments.Add(1)
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if l.rewrites.Load() != gen {
			continue
		}
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		s.damage = l.damaged(s, bad)
		return s.damage
	}
}

// checkBelow checks the framing and CRC of s's batches from its start to
// the first whose base offset is end or more (or to its published size).
// It returns the bytes checked and, for a batch that fails, where and why.
func (s *segment) checkBelow(ctx context.Context, end int64, pace Pace) (int64, *corruption, error) {
	limit := s.size.Load()
	sc := newBatchScanner(s, 0, s.base, limit)
	var unpaced int64
	for sc.pos < limit {
		h, bad, err := sc.next(func(h BatchHeader) bool { return h.BaseOffset < end })
		if err != nil {
			return sc.pos, nil, err
		}
		if bad != "" {
			return sc.pos, &corruption{pos: sc.pos, next: sc.expect, reason: bad}, nil
		}
		if h.BaseOffset >= end {
			return sc.pos - h.Size(), nil, nil
		}
		if unpaced += h.Size(); unpaced >= paceChunk {
			if err := s.paceVerify(ctx, pace, unpaced); err != nil {
				return sc.pos, nil, err
			}
			unpaced = 0
		}
	}
	return sc.pos, nil, nil
}

// paceVerify calls pace unless a read waits for the verification.
func (s *segment) paceVerify(ctx context.Context, pace Pace, n int64) error {
	if pace == nil || s.verifyWaiters.Load() > 0 {
		return ctx.Err()
	}
	return pace(ctx, n)
}

// damaged builds the error for damage c found in s, logs it and reports
// it to the damage handler.
func (l *Log) damaged(s *segment, c *corruption) error {
	err := fmt.Errorf("%w: segment %s, batch at position %d (offset %d): %s; it was flushed intact, so its bytes changed on disk since",
		ErrDamaged, s.path, c.pos, c.next, c.reason)
	l.verified.damaged.Add(1)
	l.logger.Error("damaged batch in a segment: it is not served", "segment", s.path, "position", c.pos, "offset", c.next, "reason", c.reason)
	if f := l.onDamage.Load(); f != nil {
		(*f)(err)
	}
	return err
}
