package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

const testWALSegment = 64 << 10

// fullVFS is raft-wal's file system with a switch that makes creating a
// segment fail as a full disk does.
type fullVFS struct {
	types.VFS
	full atomic.Bool
}

func (v *fullVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if v.full.Load() {
		return nil, fmt.Errorf("create %s: %w", name, syscall.ENOSPC)
	}
	return v.VFS.Create(dir, name, size)
}

// failingMeta is raft-wal's metadata store with a switch that makes its
// commits fail.
type failingMeta struct {
	*metadb.BoltMetaDB
	fail atomic.Bool
}

func (m *failingMeta) CommitState(ps types.PersistentState) error {
	if m.fail.Load() {
		return fmt.Errorf("commit: %w", syscall.ENOSPC)
	}
	return m.BoltMetaDB.CommitState(ps)
}

func walEntry(i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(make([]byte, 0, 1024), "entry %d %01000d", i, i)}
}

// appendUntilSealed appends entries from *next on until raft-wal refuses
// one with ErrSealed (its background rotation failed), and fails the test
// if that takes too many.
func appendUntilSealed(t *testing.T, store func([]*raft.Log) error, next *uint64) error {
	t.Helper()
	for range 10 * testWALSegment / 1024 {
		err := store([]*raft.Log{walEntry(*next)})
		if err != nil {
			return err
		}
		*next++
	}
	t.Fatalf("no append failed after %d entries", 10*testWALSegment/1024)
	return nil
}

func checkEntries(t *testing.T, s raft.LogStore, last uint64) {
	t.Helper()
	for i := uint64(1); i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("read entry %d of %d: %v", i, last, err)
		}
		if string(l.Data) != string(walEntry(i).Data) {
			t.Fatalf("entry %d holds %.20q", i, l.Data)
		}
	}
	if got, err := s.LastIndex(); err != nil || got != last {
		t.Fatalf("last index %d, %v; want %d", got, err, last)
	}
}

// TestWALStoreFailedRotation: raft-wal seals a full segment and creates the
// next one in the background; when that creation fails (a full disk),
// raft-wal alone refuses every later append, even once space is back. The
// store reopens it once there is room, and appends go on with every entry
// kept.
func TestWALStoreFailedRotation(t *testing.T) {
	for _, raw := range []bool{true, false} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			dir := t.TempDir()
			vfs := &fullVFS{VFS: fs.New()}
			open := func() (*wal.WAL, error) {
				meta := &repairingMeta{BoltMetaDB: &metadb.BoltMetaDB{}, segSize: testWALSegment, logger: slog.Default()}
				return wal.Open(dir, wal.WithLogger(hclog.NewNullLogger()), wal.WithSegmentSize(testWALSegment),
					wal.WithMetaStore(meta), wal.WithSegmentFiler(segment.NewFiler(dir, vfs)))
			}
			w, err := open()
			if err != nil {
				t.Fatal(err)
			}
			s := &walStore{dir: dir, segSize: testWALSegment, logger: slog.Default(), open: open, w: w}
			var roomErr atomic.Pointer[error]
			s.room = func() error {
				if e := roomErr.Load(); e != nil {
					return *e
				}
				return nil
			}
			defer s.Close()
			var store func([]*raft.Log) error = s.StoreLogs
			if raw {
				store = w.StoreLogs
			}
			next := uint64(1)
			vfs.full.Store(true)
			full := errors.New("disk full")
			roomErr.Store(&full)
			err = appendUntilSealed(t, store, &next)
			if !errors.Is(err, types.ErrSealed) {
				t.Fatalf("append after a failed rotation: %v, want ErrSealed", err)
			}
			if !raw && !errors.Is(err, ErrStorage) {
				t.Fatalf("append after a failed rotation: %v, want ErrStorage", err)
			}
			// Space is back.
			vfs.full.Store(false)
			roomErr.Store(nil)
			deadline := time.Now().Add(3 * walRetryInterval)
			for {
				err = store([]*raft.Log{walEntry(next)})
				if err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if raw {
				if !errors.Is(err, types.ErrSealed) {
					t.Fatalf("raw raft-wal after space is back: %v; if it recovers by itself now, walStore's reopen may go", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("append once space is back: %v", err)
			}
			// A few more segments' worth.
			for range 3 * testWALSegment / 1024 {
				next++
				if err := store([]*raft.Log{walEntry(next)}); err != nil {
					t.Fatalf("append %d: %v", next, err)
				}
			}
			checkEntries(t, s, next)
		})
	}
}

// TestWALStoreRotationLostAtCrash: the append that fills a segment seals
// it, and the rotation that records the seal and creates the next segment
// runs after. If that record never lands (a crash, or a failed commit on a
// full disk), raft-wal alone recovers the sealed segment as its tail and
// refuses every append, restart after restart. repairingMeta records the
// rotation when it loads.
func TestWALStoreRotationLostAtCrash(t *testing.T) {
	dir := t.TempDir()
	meta := &failingMeta{BoltMetaDB: &metadb.BoltMetaDB{}}
	w, err := wal.Open(dir, wal.WithLogger(hclog.NewNullLogger()), wal.WithSegmentSize(testWALSegment), wal.WithMetaStore(meta))
	if err != nil {
		t.Fatal(err)
	}
	meta.fail.Store(true)
	next := uint64(1)
	if err := appendUntilSealed(t, w.StoreLogs, &next); !errors.Is(err, types.ErrSealed) {
		t.Fatalf("append after a failed rotation: %v, want ErrSealed", err)
	}
	last := next - 1
	w.Close()

	// raft-wal alone: sealed for good.
	w, err = wal.Open(dir, wal.WithLogger(hclog.NewNullLogger()), wal.WithSegmentSize(testWALSegment))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs([]*raft.Log{walEntry(next)}); !errors.Is(err, types.ErrSealed) {
		t.Fatalf("raw raft-wal reopened: %v; if it recovers by itself now, repairingMeta may go", err)
	}
	w.Close()

	s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * testWALSegment / 1024 {
		if err := s.StoreLogs([]*raft.Log{walEntry(next)}); err != nil {
			t.Fatalf("append %d after the repair: %v", next, err)
		}
		next++
	}
	checkEntries(t, s, next-1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// And again after a restart, with nothing left to repair.
	s, err = openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkEntries(t, s, next-1)
	if last == 0 {
		t.Fatal("nothing was written before the failed rotation")
	}
	entries, _ := os.ReadDir(dir)
	var segs int
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".wal" {
			segs++
		}
	}
	t.Logf("%d entries in %d segment files", next-1, segs)
}
