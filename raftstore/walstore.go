package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
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
// the next one in the background. When that creation fails (no space for
// the new segment, which it allocates whole) nothing retries it: the tail
// stays sealed and every later append fails with "segment is sealed",
// until the process restarts. So on that error walStore closes raft-wal
// and opens it again, which creates the missing segment, once the disk
// has room for it; in between, appends fail (ErrStorage) and reads go on.
//
// raft-wal has the same hole across a crash: a tail sealed on disk whose
// rotation never reached its metadata is recovered sealed, and appends
// fail forever. repairingMeta records that rotation when raft-wal loads
// its metadata.
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
	// gen counts reopens; sealed is set while raft-wal's tail is sealed
	// with its next segment missing; lastTry is when a reopen was last
	// tried.
	gen     uint64
	sealed  bool
	lastTry time.Time
}

// walRetryInterval spaces reopen attempts while raft keeps appending.
const walRetryInterval = time.Second

func openWALStore(dir string, segSize int, logger *slog.Logger, hl hclog.Logger) (*walStore, error) {
	s := &walStore{dir: dir, segSize: segSize, logger: logger}
	s.open = func() (*wal.WAL, error) {
		meta := &repairingMeta{BoltMetaDB: &metadb.BoltMetaDB{}, segSize: segSize, logger: logger}
		return wal.Open(dir, wal.WithLogger(hl), wal.WithSegmentSize(segSize), wal.WithMetaStore(meta))
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.DeleteRange(min, max)
}

// IsMonotonic tells raft that indexes never skip (raft-wal's rule).
func (s *walStore) IsMonotonic() bool { return true }

func (s *walStore) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

func (s *walStore) StoreLogs(logs []*raft.Log) error {
	gen, err := s.store(logs)
	if !errors.Is(err, types.ErrSealed) {
		if isNoSpace(err) {
			return fmt.Errorf("%w: raft log: %w", ErrStorage, err)
		}
		return err
	}
	if rerr := s.reopen(gen); rerr != nil {
		return fmt.Errorf("%w: raft log: %w", ErrStorage, rerr)
	}
	_, err = s.store(logs)
	return err
}

func (s *walStore) store(logs []*raft.Log) (gen uint64, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen, s.w.StoreLogs(logs)
}

// reopen closes raft-wal and opens it again, which creates the segment its
// background rotation failed to create. It tries at most once a second,
// and only when the disk has room for the segment: a failed open would
// leave raft with no log to read. gen is the generation the failed append
// used: if another call reopened raft-wal since, there is nothing to do.
func (s *walStore) reopen(gen uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return nil
	}
	if !s.sealed {
		s.sealed = true
		s.space.wait("raft log", errors.New("raft-wal could not create its next segment"))
	}
	if time.Since(s.lastTry) < walRetryInterval {
		return fmt.Errorf("%w: waiting for space for the next segment", types.ErrSealed)
	}
	s.lastTry = time.Now()
	if err := s.room(); err != nil {
		return fmt.Errorf("%w: %w", types.ErrSealed, err)
	}
	s.logger.Warn("reopening raft-wal to create the segment it could not create", "dir", s.dir)
	if err := s.w.Close(); err != nil {
		s.logger.Warn("close raft-wal before reopening it", "err", err)
	}
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, walRetryInterval) {
		w, err := s.open()
		if err == nil {
			s.w = w
			s.gen++
			s.sealed = false
			s.space.done("raft log")
			s.logger.Info("raft-wal reopened: appends go on")
			return nil
		}
		// Raft must not find its log gone: it panics on a failed read.
		// Everything waits here until the log is back.
		s.logger.Error("reopen raft-wal (retrying)", "err", err)
		select {
		case <-s.stop:
			return fmt.Errorf("reopen raft-wal: %w", err)
		case <-time.After(delay):
		}
	}
}

func (s *walStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Close()
}

var _ raft.MonotonicLogStore = (*walStore)(nil)
var _ io.Closer = (*walStore)(nil)

// repairingMeta is raft-wal's metadata store, which on Load records a
// rotation raft-wal sealed the tail for but never recorded: a crash, or a
// failed metadata commit (a full disk), between the append that sealed the
// tail and the rotation that runs after it. Without it raft-wal recovers
// the sealed tail as its writable one, and refuses every append.
type repairingMeta struct {
	*metadb.BoltMetaDB
	segSize int
	logger  *slog.Logger
}

func (m *repairingMeta) Load(dir string) (types.PersistentState, error) {
	ps, err := m.BoltMetaDB.Load(dir)
	if err != nil || len(ps.Segments) == 0 {
		return ps, err
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
