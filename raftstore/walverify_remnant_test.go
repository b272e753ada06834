package raftstore

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func openTestWAL(t *testing.T, dir string) *walStore {
	t.Helper()
	s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWALVerifyRemnants: a healthy history that leaves bytes past the
// tail's end: entries 1..10; a batch (entry 11, 4 KiB of client bytes
// shaped like frame headers) whose write was cut before its commit frame
// (kill -9 during pwrite, or a power cut); a restart (raft-wal rewinds);
// entry 11 again, small; a restart. The remnant of the cut batch must not
// be taken for damage: the node would never start again.
func TestWALVerifyRemnants(t *testing.T) {
	for _, tc := range []struct {
		name string
		pat  []byte
	}{
		// (A remnant shaped as entry and commit frames is read by raft-wal
		// itself as more entries: raft-wal's own recovery, left alone.)
		{"huge length", []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
		{"entry headers", []byte{1, 0, 0, 0, 8, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestWAL(t, dir)
			for i := uint64(1); i <= 10; i++ {
				if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
					t.Fatal(err)
				}
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
			end := lastFrameEnd(t, files[0]) // where entry 11's frame starts
			// Client data: the pattern repeated; the codec prefix shifts it,
			// so pick the rotation that puts it on 8-byte boundaries.
			// frame header 8, varint index 1, term 1, type 1, len 2 => data at end+13.
			data := make([]byte, 4096)
			shift := (8 - int((end+13)%8)) % 8
			for i := range data {
				data[i] = tc.pat[((i-shift)%len(tc.pat)+len(tc.pat))%len(tc.pat)]
			}
			big := &raft.Log{Index: 11, Term: 1, Type: raft.LogCommand, Data: data}
			if err := s.StoreLogs([]*raft.Log{big}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			// The cut write: its commit frame never reached the file.
			newEnd := lastFrameEnd(t, files[0])
			f, _ := os.OpenFile(files[0], os.O_RDWR, 0)
			f.WriteAt(make([]byte, 8), newEnd-8)
			f.Close()

			s = openTestWAL(t, dir) // rewinds: last index 10
			checkEntries(t, s, 10)
			if err := s.StoreLogs([]*raft.Log{walEntry(11)}); err != nil {
				t.Fatal(err)
			}
			checkEntries(t, s, 11)
			s.Close()
			s2, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
			if err != nil {
				t.Fatalf("a healthy log refused: %v", err)
			}
			checkEntries(t, s2, 11)
			s2.Close()
		})
	}
}
