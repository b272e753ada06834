package log

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writeSegments writes about total bytes of batches of batchRecs 1 KiB
// records into segments of segBytes in a new directory, closes the log
// (flushed: every segment below the recovery point) and returns the
// directory and the config.
func writeSegments(tb testing.TB, total, segBytes int64, batchRecs int) (string, Config) {
	tb.Helper()
	dir := tb.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = segBytes
	cfg.RetentionMs = -1
	l, err := Open(dir, cfg, quiet)
	if err != nil {
		tb.Fatal(err)
	}
	batch := buildBatch(tb, batchSpec{records: textRecs(batchRecs, 1024), baseTs: 1})
	for written := int64(0); written < total; written += int64(len(batch)) {
		if _, err := l.Append(batch, 1); err != nil {
			tb.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir, cfg
}

// unverify marks every segment unverified again, as Open leaves them.
func (l *Log) unverify() {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		s.unverifiedEnd.Store(math.MaxInt64)
	}
}

// BenchmarkVerifySegment: verifying one 64 MiB segment from the page
// cache, with batches of 1 and of 16 records of 1 KiB.
func BenchmarkVerifySegment(b *testing.B) {
	for _, recs := range []int{1, 16} {
		b.Run(map[int]string{1: "batch=1KiB", 16: "batch=16KiB"}[recs], func(b *testing.B) {
			dir, cfg := writeSegments(b, 64<<20, 128<<20, recs)
			l := openLog(b, dir, cfg)
			b.SetBytes(l.Size())
			for b.Loop() {
				l.unverify()
				if err := l.VerifyAll(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestVerifyStartupCost measures what verification at start costs on
// about 1 GiB of segments: Open, then VerifyAll, with the segments out of
// the page cache (as after a reboot) and in it. BROKERD_VERIFY_COST=1
// runs it (it writes 1 GiB).
func TestVerifyStartupCost(t *testing.T) {
	if os.Getenv("BROKERD_VERIFY_COST") != "1" {
		t.Skip("writes 1 GiB: BROKERD_VERIFY_COST=1 runs it")
	}
	dir, cfg := writeSegments(t, 1<<30, 64<<20, 16)
	for _, cold := range []bool{true, false} {
		if cold {
			dropCache(t, dir)
		}
		began := time.Now()
		l, err := Open(dir, cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		opened := time.Since(began)
		if err := l.VerifyAll(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		verified := time.Since(began) - opened
		st := l.VerifyStats()
		t.Logf("cold=%v: %d segments, %d MiB: Open %v, VerifyAll %v (%.0f MiB/s)", cold, st.Segments, st.Bytes>>20,
			opened.Round(time.Millisecond), verified.Round(time.Millisecond), float64(st.Bytes)/(1<<20)/verified.Seconds())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// dropCache asks the kernel to drop the cached pages of dir's files.
func dropCache(tb testing.TB, dir string) {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		f, err := os.Open(dir + "/" + e.Name())
		if err != nil {
			tb.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			tb.Logf("fadvise %s: %v", e.Name(), err)
		}
		f.Close()
	}
}
