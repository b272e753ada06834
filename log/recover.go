package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
)

// Open opens the partition log in dir, creating the directory and an empty
// log if needed, and recovers it after a crash:
//
//   - segments wholly below the recovery point (the end offset as of the
//     last Flush) are trusted; their indexes get a cheap sanity check and
//     are rebuilt if it fails or if they are missing; their batches are
//     unverified: reads and VerifyAll check their CRCs later (verify.go);
//   - the segment holding the recovery point and every later one are
//     scanned batch by batch (framing, contiguous offsets, and CRCs from
//     the recovery point on; the batches below it are unverified) and
//     their indexes rebuilt; the first bad batch and everything after it
//     is truncated, with a warning;
//   - segments wholly below the log start offset, leftover temporary files
//     and index files without a segment are deleted.
//
// Sealed segments are not kept open: Open checks each in turn and leaves
// its files to DefaultOpenCache, which closes the least recently used (see
// OpenCache). A nil logger means slog.Default().
func Open(dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	return open(DefaultOpenCache(), dir, cfg, logger)
}

func open(c *OpenCache, dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{dir: dir, logger: logger.With("log", dir), cache: c, cfg: cfg.normalized()}
	ch := make(chan struct{})
	l.notifyCh.Store(&ch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if err := l.recover(); err != nil {
		for _, s := range l.segs {
			l.dropSegment(s)
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

func (l *Log) recover() error {
	cp, found, err := readCheckpoint(l.dir)
	if errors.Is(err, errBadCheckpoint) {
		l.logger.Warn("ignoring unreadable checkpoint; scanning every segment", "err", err)
	} else if err != nil {
		return err
	}
	if !found {
		cp = checkpoint{}
		l.saved = checkpoint{StartOffset: -1} // never equal to a real one
	} else {
		l.saved = cp
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		return l.resetTo(cp.StartOffset)
	}

	// The segment holding the recovery point is the first to scan.
	rp := cp.RecoveryPoint
	firstScan := 0
	for i, b := range bases {
		if b <= rp {
			firstScan = i
		}
	}
	for i, base := range bases {
		// Each segment is held while it is checked; once sealed and
		// clean it is left to the cache.
		seg, indexesOK, err := l.newSegmentFiles(base, modeRecover)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		st, err := seg.log.Stat()
		if err != nil {
			return fmt.Errorf("stat segment: %w", err)
		}
		var bad *corruption
		switch {
		case i < firstScan:
			var ok bool
			if ok, err = l.trustSealed(seg, st.Size(), bases[i+1], indexesOK); err == nil && !ok {
				l.logger.Warn("rebuilding index of segment", "segment", seg.path)
				bad, err = l.rebuild(seg, st.Size(), seg.base)
			} else if ok {
				seg.unverifiedEnd.Store(math.MaxInt64) // trusted unread
			}
		case base <= rp:
			bad, err = l.recoverFrom(seg, st.Size(), rp, indexesOK)
			seg.unverifiedEnd.Store(rp) // CRCs checked from rp on
		default:
			bad, err = l.rebuild(seg, st.Size(), seg.base)
		}
		if err != nil {
			return err
		}
		last := i == len(bases)-1
		if bad == nil && !last && bases[i+1] != seg.next.Load() {
			bad = &corruption{pos: seg.size.Load(), next: seg.next.Load(),
				reason: fmt.Sprintf("next segment starts at %d", bases[i+1])}
		}
		if bad != nil && bad.next < rp {
			// Below the recovery point every byte was fsynced and
			// trusted: it does not read back. Truncating would delete
			// flushed data (and every later segment) on this replica
			// only.
			return fmt.Errorf("%w: segment %s at position %d (offset %d): %s; it is below the recovery point %d, so this is flushed data that does not read back: "+
				"move this node's data directory aside and restart it, and it is rebuilt from its peers (a single node: restore it from a backup)",
				ErrDamaged, seg.path, bad.pos, bad.next, bad.reason, rp)
		}
		if bad != nil {
			l.logger.Warn("truncating corrupt log tail", "segment", seg.path, "position", bad.pos,
				"offset", bad.next, "reason", bad.reason, "later_segments_deleted", len(bases)-i-1)
			if err := seg.truncateAt(bad.pos, bad.next); err != nil {
				return err
			}
			if err := removeSegmentFiles(l.dir, bases[i+1:]); err != nil {
				return err
			}
			l.dirDirty = true
			break
		}
		if !last {
			if err := seg.seal(); err != nil {
				return err
			}
			// A rebuilt index is fsynced now, so that the segment can
			// be closed: recovering every segment must not keep every
			// one open.
			if seg.dirty {
				if err := seg.sync(); err != nil {
					return err
				}
			}
			l.unhold(seg)
		}
	}

	// Apply the start offset, dropping segments wholly below it.
	first, active := l.segs[0], l.active()
	start := max(cp.StartOffset, first.base)
	end := active.next.Load()
	if start > end {
		l.logger.Warn("log ends below its start offset; starting empty", "start", start, "end", end)
		return l.resetTo(start)
	}
	l.start.Store(start)
	l.end.Store(end)
	drop := 0
	for drop < len(l.segs)-1 && l.segs[drop].next.Load() <= start {
		drop++
	}
	if err := l.removeSegments(0, drop, start); err != nil {
		return err
	}
	for _, s := range l.segs {
		if created, ok := cp.createdOf(s.base); ok && s.size.Load() > 0 {
			s.created = created
		}
	}
	l.recoveryPoint = min(rp, end)
	return nil
}

// resetTo replaces every segment with one empty segment at base.
func (l *Log) resetTo(base int64) error {
	for _, s := range l.segs {
		if err := l.removeSegment(s); err != nil {
			return err
		}
	}
	l.segs = nil
	seg, _, err := l.newSegmentFiles(base, modeCreate)
	if err != nil {
		return err
	}
	l.segs = []*segment{seg}
	l.start.Store(base)
	l.end.Store(base)
	l.recoveryPoint = base
	l.dirDirty = true
	return nil
}

// trustSealed restores a flushed, sealed segment from its files without
// reading most of its batches, after cheap checks that its files agree:
// whole index entries; first and last entries in order and inside the
// segment; the last offset index entry pointing at a batch with the offset
// it names; the batches from there on framing exactly to the end of the file
// and ending at the next segment's base; the last time index entry naming a
// batch with the timestamp it records, and no later batch exceeding it.
// false means the indexes must be rebuilt.
func (l *Log) trustSealed(s *segment, logSize, nextBase int64, indexesOK bool) (bool, error) {
	if !indexesOK || (logSize == 0) != (nextBase == s.base) {
		return false, nil
	}
	if logSize == 0 {
		return s.index.entries() == 0 && s.tindex.entries() == 0, nil
	}
	pos, base := int64(0), s.base
	if n := s.index.entries(); n > 0 {
		firstRel, _, err := s.index.entry(0)
		if err != nil {
			return false, err
		}
		rel, p, err := s.index.entry(n - 1)
		if err != nil {
			return false, err
		}
		if rel < firstRel || s.base+int64(rel) >= nextBase {
			return false, nil
		}
		pos, base = int64(p), s.base+int64(rel)
		if err := s.checkBatchAt(pos, base, logSize); errors.Is(err, errIndexMismatch) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	hr := newHeaderReader(s)
	defer hr.release()
	next, tailMax := base, int64(-1)
	_, err := hr.walk(pos, base, logSize, func(hdr []byte) bool {
		next, tailMax = batchNext(hdr), max(tailMax, batchMaxTimestamp(hdr))
		return false
	})
	if errors.Is(err, errCorruptSegment) || (err == nil && next != nextBase) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if s.tindex.entries() == 0 {
		// No entry means no batch carries a timestamp; check the ends.
		hdr, _, err := hr.header(0, logSize)
		if err != nil || batchMaxTimestamp(hdr) >= 0 || tailMax >= 0 {
			return false, nil
		}
	} else {
		firstTs, firstRel, err := s.tindex.entry(0)
		if err != nil {
			return false, err
		}
		if s.tindex.lastTs < firstTs || s.tindex.lastRel < firstRel ||
			s.base+int64(s.tindex.lastRel) >= nextBase || tailMax > s.tindex.lastTs {
			return false, nil
		}
		if err := s.checkTimeIndex(logSize); errors.Is(err, errIndexMismatch) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	s.size.Store(logSize)
	s.next.Store(nextBase)
	s.maxTs.Store(s.tindex.lastTs)
	s.offOfMaxTs = s.tindex.lastRel
	return true, nil
}

// rebuild discards a segment's indexes and rebuilds them and its state by
// scanning it from the start, checking CRCs from offset verifyFrom on.
func (l *Log) rebuild(s *segment, logSize, verifyFrom int64) (*corruption, error) {
	if err := s.index.truncate(0); err != nil {
		return nil, err
	}
	if err := s.index.loadLast(); err != nil {
		return nil, err
	}
	if err := s.tindex.truncate(0); err != nil {
		return nil, err
	}
	if err := s.tindex.loadLast(); err != nil {
		return nil, err
	}
	s.dirty = true
	return s.restore(logSize, verifyFrom, l.cfg.IndexIntervalBytes)
}

// recoverFrom restores the segment holding the recovery point rp: index
// entries below rp were flushed and are kept; batches from the last of them
// on are scanned, with CRCs checked from rp.
func (l *Log) recoverFrom(s *segment, logSize, rp int64, indexesOK bool) (*corruption, error) {
	if !indexesOK {
		l.logger.Warn("rebuilding index of segment", "segment", s.path)
		return l.rebuild(s, logSize, rp)
	}
	rel := uint32(min(rp-s.base, math.MaxUint32))
	if err := s.index.truncateTo(rel); err != nil {
		return nil, err
	}
	if err := s.tindex.truncateTo(rel); err != nil {
		return nil, err
	}
	s.dirty = true
	bad, err := s.restore(logSize, rp, l.cfg.IndexIntervalBytes)
	if errors.Is(err, errIndexMismatch) {
		l.logger.Warn("rebuilding index of segment", "segment", s.path, "err", err)
		return l.rebuild(s, logSize, rp)
	}
	return bad, err
}
