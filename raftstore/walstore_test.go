package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
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

// TestWALStoreReopenFails: the disk had room when the reopen began, and
// none when raft-wal created the segment. raft-wal then left its metadata
// database locked, and the next open waited for that lock forever while
// every read waited behind it. Now the open is retried until it succeeds,
// and the write it served goes on.
func TestWALStoreReopenFails(t *testing.T) {
	dir := t.TempDir()
	vfs := &fullVFS{VFS: fs.New()}
	stop := make(chan struct{})
	s := &walStore{dir: dir, segSize: testWALSegment, logger: slog.Default(), stop: stop, room: func() error { return nil }}
	s.open = func() (*wal.WAL, error) {
		return openRaftWAL(dir, testWALSegment, slog.Default(), hclog.NewNullLogger(), false, segment.NewFiler(dir, vfs))
	}
	w, err := s.open()
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	vfs.full.Store(true)
	time.AfterFunc(300*time.Millisecond, func() { vfs.full.Store(false) })
	done := make(chan error, 1)
	const n = 3 * testWALSegment / 1024
	go func() {
		for i := uint64(1); i <= n; i++ {
			if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
				done <- fmt.Errorf("append %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appends still blocked 10 s after space came back")
	}
	checkEntries(t, s, n)
	close(stop)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWALStoreTornSeal: a crash in the middle of the write that seals the
// tail leaves an index frame no commit covers. raft-wal recovers the
// segment as sealed anyway (it refuses appends, and reads through its own
// offsets); recording that seal in the metadata would make raft-wal read
// through the torn index. The seal is cleared instead: every committed
// entry reads back and appends go on.
func TestWALStoreTornSeal(t *testing.T) {
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
	w.Close()
	ents, _ := os.ReadDir(dir)
	var name string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".wal" {
			name = e.Name()
		}
	}
	var base, id uint64
	if _, err := fmt.Sscanf(name, "%020d-%016x.wal", &base, &id); err != nil {
		t.Fatalf("segment file %q: %v", name, err)
	}
	sw, err := segment.NewFiler(dir, fs.New()).RecoverTail(types.SegmentInfo{ID: id, BaseIndex: base, MinIndex: base, SizeLimit: testWALSegment, Codec: wal.CodecBinaryV1})
	if err != nil {
		t.Fatal(err)
	}
	sealed, indexStart, _ := sw.Sealed()
	sw.Close()
	if !sealed {
		t.Fatal("the tail is not sealed")
	}
	// Tear the sealing write: the index keeps its first 10 slots; the rest,
	// and the commit after it, never reached the disk.
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	cut := int64(indexStart) + 10*4
	if _, err := f.WriteAt(make([]byte, st.Size()-cut), cut); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last, _ := s.LastIndex()
	if last == 0 || last >= next-1 {
		t.Fatalf("last index %d after the torn seal; the sealing append (%d) never committed", last, next-1)
	}
	checkEntries(t, s, last)
	for i := last + 1; i <= last+2*testWALSegment/1024; i++ {
		if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
			t.Fatalf("append %d after the torn seal: %v", i, err)
		}
	}
	checkEntries(t, s, last+2*testWALSegment/1024)
}

// TestWALStoreTruncateOnFullDisk: raft-wal also creates a segment when it
// truncates, the suffix on a follower whose log conflicts with the
// leader's, or the whole log after a snapshot install. A creation that
// failed for space left it failing every write for good; now it is
// reopened once space is back.
func TestWALStoreTruncateOnFullDisk(t *testing.T) {
	for _, c := range []struct {
		name     string
		min, max uint64
		next     uint64
	}{{"suffix", 60, 100, 60}, {"whole log", 1, 100, 500}} {
		t.Run(c.name, func(t *testing.T) {
			mnt := t.TempDir()
			mountTestTmpfs(t, mnt, "4m")
			dir := filepath.Join(mnt, "wal")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			for i := uint64(1); i <= 100; i++ {
				if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
					t.Fatal(err)
				}
			}
			filler := fillTestDisk(t, mnt)
			if err := s.DeleteRange(c.min, c.max); !errors.Is(err, ErrStorage) {
				t.Fatalf("DeleteRange on a full disk: %v, want ErrStorage", err)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(3 * walRetryInterval)
			for {
				err = s.DeleteRange(c.min, c.max)
				if err == nil {
					err = s.StoreLogs([]*raft.Log{walEntry(c.next)})
				}
				if err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("still failing once space is back: %v", err)
			}
		})
	}
}

// mountTestTmpfs mounts a tmpfs of size on dir until the test ends; the
// test is skipped without root.
func mountTestTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillTestDisk writes a file in dir until its filesystem is full.
func fillTestDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for chunk := make([]byte, 4096); ; {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}
