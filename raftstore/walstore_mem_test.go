package raftstore

import (
	"bytes"
	"errors"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
)

// TestWALStoreBatchMemoryBounded: a follower catching up stores one
// AppendEntries RPC's entries (maxAppendEntries of up to maxEntryBytes) in
// one StoreLogs, outside the proposal bound. raft-wal kept a write buffer
// as large as that whole batch for good (128 MiB here); written in
// walBatchBytes pieces, what stays is one piece's buffer.
func TestWALStoreBatchMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := openWALStore(dir, 64<<20, slog.Default(), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const entry = 2 << 20
	var logs []*raft.Log
	for i := range maxAppendEntries {
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: make([]byte, entry)})
	}
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	logs = nil
	runtime.GC()
	runtime.ReadMemStats(&m)
	grew := int64(m.HeapAlloc) - int64(before)
	t.Logf("one %d MiB catch-up batch: the heap kept %d MiB more after GC", maxAppendEntries*entry>>20, grew>>20)
	if grew > 3*walBatchBytes {
		t.Fatalf("a %d MiB batch left %d MiB on the heap, want at most %d", maxAppendEntries*entry>>20, grew>>20, 3*walBatchBytes>>20)
	}
	checkEntries2 := func() {
		var l raft.Log
		if err := s.GetLog(maxAppendEntries, &l); err != nil || len(l.Data) != entry {
			t.Fatalf("entry %d: %v, %d bytes", maxAppendEntries, err, len(l.Data))
		}
	}
	checkEntries2()
}

// TestWALStoreSplitWriteFailsMidway: a batch written in pieces whose
// second piece fails (the disk full after the first): raft hears of a
// failure, and the next call with the same entries replaces whatever the
// first piece left, so the log ends up with each entry once.
func TestWALStoreSplitWriteFailsMidway(t *testing.T) {
	dir := t.TempDir()
	vfs := &fullVFS{VFS: fs.New()}
	const segSize = 24 << 20 // the first piece (16 MiB) fits, the second seals it
	s := &walStore{dir: dir, segSize: segSize, logger: slog.Default()}
	var full atomic.Bool
	s.room = func() error {
		if full.Load() {
			return errors.New("no room")
		}
		return nil
	}
	s.open = func() (*wal.WAL, error) {
		return openRaftWAL(dir, segSize, slog.Default(), hclog.NewNullLogger(), false, segment.NewFiler(dir, vfs))
	}
	w, err := s.open()
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	defer s.Close()
	var logs []*raft.Log
	for i := uint64(1); i <= 12; i++ { // 12 entries of 3 MiB: pieces of 5, 5 and 2
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, 3<<20)})
	}
	vfs.full.Store(true)
	full.Store(true)
	if err := s.StoreLogs(logs); err == nil {
		t.Fatal("a batch whose second piece could not be written was stored")
	}
	vfs.full.Store(false)
	full.Store(false)
	time.Sleep(walRetryInterval)
	if err := s.StoreLogs(logs); err != nil {
		t.Fatalf("the same entries once space is back: %v", err)
	}
	for i := uint64(1); i <= 12; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, logs[i-1].Data) {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if last, _ := s.LastIndex(); last != 12 {
		t.Fatalf("last index %d, want 12", last)
	}
}
