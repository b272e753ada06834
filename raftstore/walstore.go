package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// walStore is raft's log store: hashicorp/raft-wal, made to survive a full
// disk. raft-wal writes a segment until it is full, seals it, and creates
// the next one in the background; a truncation creates a fresh tail too.
// When such a creation fails (no space for the new segment, which it
// allocates whole) nothing retries it: every later write fails ("segment
// is sealed", ...) until the process restarts. So after a failed write
// walStore closes raft-wal and opens it again from its metadata, which
// creates the missing segment, once the disk has room for it; in between,
// writes fail (ErrStorage) and reads go on.
//
// raft-wal has the same hole across a crash: a tail sealed on disk whose
// rotation never reached its metadata is recovered sealed, and appends
// fail forever; and a seal torn by a crash is recovered as a seal.
// repairingMeta mends both when raft-wal loads its metadata.
type walStore struct {
	dir     string
	segSize int
	logger  *slog.Logger
	space   *spaceGuard // nil in tests
	stop    <-chan struct{}
	// open opens raft-wal on dir, and room reports whether the disk has
	// room for a new segment (variables for tests).
	open func() (*wal.WAL, error)
	room func() error

	// mu is held shared by every call into raft-wal, and exclusively while
	// it is reopened.
	mu sync.RWMutex
	w  *wal.WAL
	// gen counts reopens; lastTry is when a reopen was last tried.
	gen     uint64
	lastTry time.Time
	// broken is set from a failed write until a write succeeds or raft-wal
	// is reopened.
	broken atomic.Bool
}

// openRaftWAL opens raft-wal on dir with repairingMeta (verifying every
// segment with verify); sf, if not nil, replaces raft-wal's segment files
// (tests).
func openRaftWAL(dir string, segSize int, logger *slog.Logger, hl hclog.Logger, verify bool, sf types.SegmentFiler) (*wal.WAL, error) {
	meta := &repairingMeta{BoltMetaDB: &metadb.BoltMetaDB{}, segSize: segSize, logger: logger, verify: verify}
	if sf == nil {
		sf = segment.NewFiler(dir, fs.New()) // raft-wal's own default
	}
	w, err := wal.Open(dir, wal.WithLogger(hl), wal.WithSegmentSize(segSize), wal.WithMetaStore(meta), wal.WithSegmentFiler(sf))
	if err != nil {
		// raft-wal leaves its metadata database open, and locked, when it
		// fails after loading it: the next open would wait for that lock
		// forever.
		_ = meta.BoltMetaDB.Close()
		return nil, err
	}
	return w, nil
}

// walRetryInterval spaces reopen attempts while raft keeps appending.
const walRetryInterval = time.Second

func openWALStore(dir string, segSize int, logger *slog.Logger, hl hclog.Logger) (*walStore, error) {
	s := &walStore{dir: dir, segSize: segSize, logger: logger}
	first := true // only the open at start verifies every segment
	s.open = func() (*wal.WAL, error) {
		verify := first
		first = false
		return openRaftWAL(dir, segSize, logger, hl, verify, nil)
	}
	s.room = func() error {
		if _, avail, ok := filesystemSpace(dir); ok && avail < uint64(segSize)+minWALSegment {
			return fmt.Errorf("the next %d-byte segment does not fit in the %d bytes free", segSize, avail)
		}
		return nil
	}
	w, err := s.open()
	if err != nil {
		return nil, fmt.Errorf("open raft wal: %w", err)
	}
	s.w = w
	return s, nil
}

func (s *walStore) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.FirstIndex()
}

func (s *walStore) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.LastIndex()
}

func (s *walStore) GetLog(index uint64, log *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.GetLog(index, log)
}

func (s *walStore) DeleteRange(min, max uint64) error {
	return s.write(func(w *wal.WAL) error { return w.DeleteRange(min, max) })
}

// IsMonotonic tells raft that indexes never skip (raft-wal's rule).
func (s *walStore) IsMonotonic() bool { return true }

func (s *walStore) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// walBatchBytes bounds one raft-wal write. raft-wal keeps its write buffer
// at the size of the largest write it made (rounded up to a power of two)
// for good, and raft hands a follower catching up 64 entries of up to 4
// MiB (a single batch up to 32 MiB) at once: a 256 MiB buffer that no
// budget counted.
const walBatchBytes = 16 << 20

// StoreLogs writes logs in writes of at most walBatchBytes. It is all or
// nothing, as raft expects: if a later write fails, the earlier ones are
// deleted again; and entries a failed call left behind (the delete failed
// too) are replaced by the next call, which starts at or before them.
func (s *walStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	first := logs[0].Index
	if err := s.write(func(w *wal.WAL) error {
		last, err := w.LastIndex()
		if err == nil && last >= first && first > 0 {
			// Left by a call that failed midway: raft does not count them.
			err = w.DeleteRange(first, last)
		}
		return err
	}); err != nil {
		return err
	}
	for start := 0; start < len(logs); {
		end, size := start+1, len(logs[start].Data)
		for end < len(logs) && size+len(logs[end].Data) <= walBatchBytes {
			size += len(logs[end].Data)
			end++
		}
		chunk := logs[start:end]
		if err := s.write(func(w *wal.WAL) error { return w.StoreLogs(chunk) }); err != nil {
			if start > 0 {
				if derr := s.write(func(w *wal.WAL) error { return w.DeleteRange(first, chunk[0].Index-1) }); derr != nil {
					// raft hears of a failure but the log holds a prefix
					// of the entries: the outcome is not known.
					return fmt.Errorf("raft log: a write failed after %d of %d entries were stored, and deleting them failed too (%v): %w", start, len(logs), derr, err)
				}
			}
			return err
		}
		start = end
	}
	return nil
}

// write runs a write on raft-wal. raft-wal creates segment files as it
// writes (the next one after a seal, a fresh tail after a truncation), and
// a creation that fails leaves its memory and its metadata apart for good:
// every later write fails ("segment is sealed", "non-monotonic", "file
// exists"). So after a failed write raft-wal is reopened from its
// metadata, once the disk has room for a segment, and the write is tried
// once more. A write that still fails returns ErrStorage: raft-wal rolls a
// failed append back, so the entries are not in the log.
func (s *walStore) write(op func(*wal.WAL) error) error {
	gen, err := s.do(op)
	if err == nil {
		return nil
	}
	if rerr := s.reopen(gen, err); rerr != nil {
		return fmt.Errorf("%w: raft log: %w (not reopened yet: %w)", ErrStorage, err, rerr)
	}
	if _, err := s.do(op); err != nil {
		return fmt.Errorf("%w: raft log: %w", ErrStorage, err)
	}
	return nil
}

func (s *walStore) do(op func(*wal.WAL) error) (gen uint64, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	err = op(s.w)
	if err == nil && s.broken.Load() {
		// The write that failed was a passing fault.
		s.healed()
	}
	return s.gen, err
}

// healed records that raft-wal writes again.
func (s *walStore) healed() {
	if s.broken.CompareAndSwap(true, false) {
		s.space.done("raft log")
		s.logger.Info("raft log writes go on")
	}
}

// reopen closes raft-wal and opens it again from its metadata, which
// creates the segment file a failed write could not. It tries at most once
// a second, and only when the disk has room for a segment: raft must not
// find its log gone (it panics on a failed read), so once raft-wal is
// closed, everything waits until it is open again. gen is the generation
// the failed write used: if raft-wal was reopened since, there is nothing
// to do. cause is that write's error.
func (s *walStore) reopen(gen uint64, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return nil
	}
	if cause != nil && !s.broken.Swap(true) {
		s.space.wait("raft log", cause)
		s.logger.Warn("a raft log write failed: raft-wal is reopened once the disk has room for a segment", "err", cause)
	}
	if time.Since(s.lastTry) < walRetryInterval {
		return errors.New("tried less than a second ago")
	}
	s.lastTry = time.Now()
	if err := s.room(); err != nil {
		return err
	}
	if err := s.w.Close(); err != nil {
		s.logger.Warn("close raft-wal before reopening it", "err", err)
	}
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, walRetryInterval) {
		w, err := s.open()
		if err == nil {
			s.w = w
			s.gen++
			s.healed()
			s.logger.Info("raft-wal reopened")
			return nil
		}
		s.logger.Error("reopen raft-wal (retrying; raft waits)", "err", err)
		select {
		case <-s.stop:
			return fmt.Errorf("reopen raft-wal: %w", err)
		case <-time.After(delay):
		}
	}
}

// repair reopens raft-wal after a failed write once the disk has room,
// without waiting for raft's next write (watchSpace calls it): a node with
// nothing to append is otherwise refused writes for good.
func (s *walStore) repair() {
	if !s.broken.Load() {
		return
	}
	s.mu.RLock()
	gen := s.gen
	s.mu.RUnlock()
	if err := s.reopen(gen, nil); err != nil {
		s.logger.Debug("raft-wal not reopened yet", "err", err)
	}
}

func (s *walStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Close()
}

// raft-wal's frame header: a type byte (2 for an index frame), three zero
// bytes, and the frame's length, little-endian; an index frame holds one
// 4-byte offset per entry of the segment.
const (
	walFrameHeaderLen = 8
	walFrameIndex     = 2
)

// tornSeal reports whether the index frame that seals a recovered tail
// segment was never committed: it lists another number of entries than
// the segment holds (want), because the commit that would have covered it
// failed its checksum and recovery rewound past it (a crash in the middle
// of the sealing write, never acknowledged), or no commit that verifies
// follows it (a truncation's seal, which adds no entries, torn). raft-wal still marks the
// segment sealed then, with an index nothing validated. The frame's
// header is zeroed, so that recovery stops before it and the segment is
// an ordinary unsealed tail again; the bytes after the last commit are
// garbage in any case.
func tornSeal(path string, indexStart, want uint64) (bool, error) {
	if indexStart < walFrameHeaderLen {
		return false, fmt.Errorf("raft-wal segment %s: index at offset %d", path, indexStart)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("check the seal of raft-wal segment: %w", err)
	}
	defer f.Close()
	var h [walFrameHeaderLen]byte
	at := int64(indexStart) - walFrameHeaderLen
	if _, err := f.ReadAt(h[:], at); err != nil {
		return false, fmt.Errorf("check the seal of raft-wal segment %s: %w", path, err)
	}
	if h[0] == walFrameIndex && uint64(binary.LittleEndian.Uint32(h[4:]))/4 == want && verifyWALSegment(path, true) == nil {
		// The index lists every entry, and a commit that verifies
		// covers it.
		return false, nil
	}
	var zero [walFrameHeaderLen]byte
	if _, err := f.WriteAt(zero[:], at); err != nil {
		return true, fmt.Errorf("clear the uncommitted seal of raft-wal segment %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return true, fmt.Errorf("clear the uncommitted seal of raft-wal segment %s: %w", path, err)
	}
	return true, nil
}

var _ raft.MonotonicLogStore = (*walStore)(nil)
var _ io.Closer = (*walStore)(nil)

// repairingMeta is raft-wal's metadata store, which on Load records a
// rotation raft-wal sealed the tail for but never recorded: a crash, or a
// failed metadata commit (a full disk), between the append that sealed the
// tail and the rotation that runs after it. Without it raft-wal recovers
// the sealed tail as its writable one, and refuses every append.
//
// With verify, Load also checks every commit of every segment
// (verifyWALSegment) and fails on damage, which raft-wal would serve.
type repairingMeta struct {
	*metadb.BoltMetaDB
	segSize int
	logger  *slog.Logger
	verify  bool
}

func (m *repairingMeta) Load(dir string) (types.PersistentState, error) {
	ps, err := m.BoltMetaDB.Load(dir)
	if err != nil || len(ps.Segments) == 0 {
		return ps, err
	}
	if m.verify {
		for _, si := range ps.Segments {
			if err := verifyWALSegment(filepath.Join(dir, segment.FileName(si)), !si.SealTime.IsZero()); err != nil && !errors.Is(err, os.ErrNotExist) {
				return ps, fmt.Errorf("%w; this node's raft log cannot be trusted: move its data directory aside and restart it, and it is rebuilt from its peers (a single node: restore the data directory from a backup)", err)
			}
		}
	}
	tail := ps.Segments[len(ps.Segments)-1]
	if !tail.SealTime.IsZero() {
		return ps, nil
	}
	w, err := segment.NewFiler(dir, fs.New()).RecoverTail(tail)
	if errors.Is(err, os.ErrNotExist) {
		return ps, nil // raft-wal creates it
	}
	if err != nil {
		return ps, fmt.Errorf("recover raft-wal tail segment %d: %w", tail.ID, err)
	}
	sealed, indexStart, err := w.Sealed()
	last := w.LastIndex()
	if cerr := w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil || !sealed {
		return ps, err
	}
	path := filepath.Join(dir, segment.FileName(tail))
	if torn, err := tornSeal(path, indexStart, last-tail.BaseIndex+1); err != nil || torn {
		if torn && err == nil {
			m.logger.Warn("raft-wal's tail segment held a seal that was never committed (a crash while writing it): cleared it", "segment", tail.ID, "last_index", last)
		}
		return ps, err
	}
	now := time.Now()
	tail.SealTime, tail.MaxIndex, tail.IndexStart = now, last, indexStart
	segs := append(ps.Segments[:len(ps.Segments)-1:len(ps.Segments)-1], tail, types.SegmentInfo{
		ID: ps.NextSegmentID, BaseIndex: last + 1, MinIndex: last + 1,
		SizeLimit: uint32(m.segSize), Codec: wal.CodecBinaryV1, CreateTime: now,
	})
	fixed := types.PersistentState{NextSegmentID: ps.NextSegmentID + 1, Segments: segs}
	if err := m.BoltMetaDB.CommitState(fixed); err != nil {
		return ps, fmt.Errorf("record the rotation of sealed raft-wal segment %d: %w", tail.ID, err)
	}
	m.logger.Warn("raft-wal's tail segment was sealed but never rotated (a crash or a full disk): rotated it now", "segment", tail.ID, "last_index", last)
	return fixed, nil
}
