package raftstore

import (
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestWALStoreTornTruncationSeal: raft-wal's ForceSeal (a suffix
// DeleteRange: truncateTailLocked) writes an index frame and its commit in
// one write. A crash where the index frame landed and the commit did not:
// the seal listed every entry, so it was recorded as committed, and the
// next start refused the log (a sealed segment without a committed seal).
// A seal no verified commit covers is cleared instead.
func TestWALStoreTornTruncationSeal(t *testing.T) {
	dir := t.TempDir()
	s := openTestWAL(t, dir)
	for i := uint64(1); i <= 10; i++ {
		if err := s.StoreLogs([]*raft.Log{walEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	raw, _ := os.ReadFile(files[0])
	var offs []uint32
	off := int64(32)
	for raw[off] != 0 {
		n := int64(binary.LittleEndian.Uint32(raw[off+4:]))
		if raw[off] == 1 {
			offs = append(offs, uint32(off))
			off += 8 + n + int64(walPad(uint32(n)))
		} else {
			off += 8
		}
	}
	idx := make([]byte, 8+4*len(offs))
	idx[0] = 2
	binary.LittleEndian.PutUint32(idx[4:], uint32(4*len(offs)))
	for i, o := range offs {
		binary.LittleEndian.PutUint32(idx[8+4*i:], o)
	}
	f, _ := os.OpenFile(files[0], os.O_RDWR, 0)
	f.WriteAt(idx, off) // the index frame; its commit frame never landed
	f.Close()

	s, err := openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("start 1: %v", err)
	}
	checkEntries(t, s, 10)
	s.Close()
	s, err = openWALStore(dir, testWALSegment, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("start 2 refused: %v", err)
	}
	s.Close()
}
