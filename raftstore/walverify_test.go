package raftstore

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// walWithSegments writes entries through walStore until dir holds at
// least n segment files, closes it, and returns the files (oldest first)
// and the last index.
func walWithSegments(t *testing.T, dir string, n int) ([]string, uint64) {
	t.Helper()
	s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	i := uint64(1)
	for ; len(files) < n; i++ {
		if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
			t.Fatal(err)
		}
		files, _ = filepath.Glob(filepath.Join(dir, "*.wal"))
	}
	// One more segment's worth, so the last file listed is sealed.
	for range testWALSegment / 1024 {
		if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
			t.Fatal(err)
		}
		i++
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ = filepath.Glob(filepath.Join(dir, "*.wal"))
	slices.Sort(files)
	return files, i - 1
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestWALVerify: a byte changed in an entry that raft-wal committed long
// ago is read back by raft-wal as it is; the store refuses to open such a
// log, with the segment named, whether the damage is in a sealed segment
// or in the tail before its last write. A last write torn by a crash is
// not damage.
func TestWALVerify(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		dir := t.TempDir()
		_, last := walWithSegments(t, dir, 3)
		s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
		if err != nil {
			t.Fatalf("a clean log: %v", err)
		}
		defer s.Close()
		checkEntries(t, s, last)
	})
	t.Run("sealed segment", func(t *testing.T) {
		dir := t.TempDir()
		files, _ := walWithSegments(t, dir, 3)
		flipByte(t, files[0], 5000) // inside an entry of the first, sealed, segment
		_, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
		if !errors.Is(err, ErrWALDamaged) {
			t.Fatalf("open with a damaged sealed segment: %v, want ErrWALDamaged", err)
		}
		t.Logf("%v", err)
	})
	t.Run("tail before its last write", func(t *testing.T) {
		dir := t.TempDir()
		files, _ := walWithSegments(t, dir, 2)
		flipByte(t, files[len(files)-1], 100)
		_, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
		if !errors.Is(err, ErrWALDamaged) {
			t.Fatalf("open with a damaged tail: %v, want ErrWALDamaged", err)
		}
	})
	t.Run("torn last write", func(t *testing.T) {
		dir := t.TempDir()
		s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= 10; i++ {
			if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
		st, _ := os.Stat(files[0])
		// The last write's entry: its bytes changed, as a crash midway
		// leaves them; its commit no longer matches, and nothing follows.
		if err := verifyWALSegment(files[0], false); err != nil {
			t.Fatalf("before: %v", err)
		}
		end := lastFrameEnd(t, files[0])
		flipByte(t, files[0], end-100)
		if err := verifyWALSegment(files[0], false); err != nil {
			t.Fatalf("a torn last write (file of %d bytes): %v", st.Size(), err)
		}
		s, err = openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
		if err != nil {
			t.Fatalf("open after a torn last write: %v", err)
		}
		defer s.Close()
		checkEntries(t, s, 9)
	})
}

// lastFrameEnd is the offset just past the last commit frame of a segment
// file.
func lastFrameEnd(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off, end := int64(walFileHeaderLen), int64(0)
	for off+walFrameHeaderLen <= int64(len(data)) {
		typ := data[off]
		if typ == 0 {
			break
		}
		n := int64(data[off+4]) | int64(data[off+5])<<8 | int64(data[off+6])<<16 | int64(data[off+7])<<24
		if typ == walFrameCommit {
			off += walFrameHeaderLen
			end = off
			continue
		}
		off += walFrameHeaderLen + n + int64(walPad(uint32(n)))
	}
	return end
}
