package raftstore

// Benchmarks that choose brokerd's default raft LogStore: raft-boltdb/v2
// versus raft-wal. Results and the decision are in docs/BENCHMARKS.md.
//
//	go test -run='^$' -bench=BenchmarkLogStore -benchtime=3s -count=3 ./raftstore/
//
// Both stores are opened with their defaults, and both fsync inside every
// StoreLogs call: raft-boltdb commits a bbolt transaction (NoSync=false, two
// fdatasyncs per commit), raft-wal writes the batch plus a commit frame and
// fsyncs the segment file once. raft calls StoreLogs from a single goroutine,
// so there is no parallel variant.

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
)

// benchLogStore is what the benchmarks need: a raft.LogStore they can close.
type benchLogStore interface {
	raft.LogStore
	Close() error
}

type logStoreImpl struct {
	name string
	open func(dir string) (benchLogStore, error)
}

var logStoreImpls = []logStoreImpl{
	{"boltdb", func(dir string) (benchLogStore, error) {
		// Default options: NoSync is false, so every commit is fdatasynced.
		return raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	}},
	{"wal", func(dir string) (benchLogStore, error) {
		// Default options: 64 MiB segments, binary codec, no-op metrics; every
		// StoreLogs ends with an fsync of the tail segment.
		return wal.Open(dir)
	}},
}

var (
	// Compile-time checks that both candidates provide what raft.NewRaft needs.
	_ raft.LogStore          = (*wal.WAL)(nil)
	_ raft.StableStore       = (*wal.WAL)(nil)
	_ raft.MonotonicLogStore = (*wal.WAL)(nil)
	_ raft.LogStore          = (*raftboltdb.BoltStore)(nil)
	_ raft.StableStore       = (*raftboltdb.BoltStore)(nil)
)

type logStoreShape struct {
	name  string
	size  int // bytes of Data per entry
	batch int // entries per StoreLogs call
}

var logStoreShapes = []logStoreShape{
	{"1KiBx1", 1 << 10, 1},
	{"1KiBx64", 1 << 10, 64},
	{"64KiBx16", 64 << 10, 16},
}

// benchPayload returns incompressible bytes so neither store gets an
// accidental advantage from the page cache or the device.
func benchPayload(size int) []byte {
	p := make([]byte, size)
	rand.New(rand.NewSource(int64(size))).Read(p)
	return p
}

// newBenchBatch returns batch entries sharing one payload; the caller sets
// the indexes before each StoreLogs.
func newBenchBatch(batch int, data []byte) []*raft.Log {
	now := time.Now()
	logs := make([]*raft.Log, batch)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: now}
	}
	return logs
}

// reportLatency adds the median and p99 StoreLogs/GetLog latency in µs.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkLogStore measures appends: each iteration is one StoreLogs call of
// batch entries of size bytes with increasing indexes, into a store opened in
// a fresh directory.
func BenchmarkLogStore(b *testing.B) {
	for _, impl := range logStoreImpls {
		b.Run(impl.name, func(b *testing.B) {
			for _, shape := range logStoreShapes {
				b.Run(shape.name, func(b *testing.B) {
					benchStoreLogs(b, impl, shape)
				})
			}
		})
	}
}

func benchStoreLogs(b *testing.B, impl logStoreImpl, shape logStoreShape) {
	store, err := impl.open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	logs := newBenchBatch(shape.batch, benchPayload(shape.size))
	lat := make([]time.Duration, 0, b.N)
	next := uint64(1)

	b.SetBytes(int64(shape.size * shape.batch))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range logs {
			l.Index = next
			next++
		}
		t0 := time.Now()
		if err := store.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()

	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N*shape.batch)/s, "entries/s")
	}
	reportLatency(b, lat)

	// Sanity: the last entry is readable and intact.
	if b.N > 0 {
		var got raft.Log
		if err := store.GetLog(next-1, &got); err != nil {
			b.Fatalf("GetLog(%d): %v", next-1, err)
		}
		if len(got.Data) != shape.size {
			b.Fatalf("GetLog(%d): %d bytes, want %d", next-1, len(got.Data), shape.size)
		}
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLogStoreGet measures read-back, which is what raft does on restart
// (replaying entries not covered by a snapshot) and what a leader does when it
// sends entries to a lagging follower. The store is filled, closed and
// reopened (so raft-wal goes through tail recovery, as after a restart), then
// each iteration is one GetLog of the next index, wrapping around. Data are
// in the page cache: this measures the store's CPU and copy cost, not the
// disk. reopen-ms is how long opening the filled store took.
func BenchmarkLogStoreGet(b *testing.B) {
	shapes := []struct {
		name  string
		size  int
		count int
	}{
		{"1KiB", 1 << 10, 32 << 10},  // 32 MiB of entries
		{"64KiB", 64 << 10, 1 << 10}, // 64 MiB of entries (crosses a wal segment)
	}
	for _, impl := range logStoreImpls {
		b.Run(impl.name, func(b *testing.B) {
			for _, shape := range shapes {
				b.Run(shape.name, func(b *testing.B) {
					dir := b.TempDir()
					fillLogStore(b, impl, dir, shape.size, shape.count)

					t0 := time.Now()
					store, err := impl.open(dir)
					if err != nil {
						b.Fatal(err)
					}
					reopen := time.Since(t0)
					defer store.Close()
					if last, err := store.LastIndex(); err != nil || last != uint64(shape.count) {
						b.Fatalf("LastIndex after reopen = %d, %v; want %d", last, err, shape.count)
					}

					// A fresh raft.Log per call, as raft does (replication.go,
					// api.go): a decoder cannot reuse the previous Data buffer.
					var l *raft.Log
					b.SetBytes(int64(shape.size))
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						idx := uint64(i%shape.count) + 1
						l = new(raft.Log)
						if err := store.GetLog(idx, l); err != nil {
							b.Fatalf("GetLog(%d): %v", idx, err)
						}
					}
					b.StopTimer()
					if len(l.Data) != shape.size {
						b.Fatalf("read %d bytes, want %d", len(l.Data), shape.size)
					}
					if s := b.Elapsed().Seconds(); s > 0 {
						b.ReportMetric(float64(b.N)/s, "entries/s")
					}
					b.ReportMetric(float64(reopen.Microseconds())/1e3, "reopen-ms")
				})
			}
		})
	}
}

// fillLogStore writes count entries of size bytes into a new store in dir and
// closes it.
func fillLogStore(b *testing.B, impl logStoreImpl, dir string, size, count int) {
	b.Helper()
	store, err := impl.open(dir)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 64
	logs := newBenchBatch(batch, benchPayload(size))
	for next := 1; next <= count; {
		n := min(batch, count-next+1)
		for i := 0; i < n; i++ {
			logs[i].Index = uint64(next + i)
		}
		if err := store.StoreLogs(logs[:n]); err != nil {
			b.Fatal(fmt.Errorf("fill at %d: %w", next, err))
		}
		next += n
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
}
