package log

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"
)

// quiet is a logger for tests that expect warnings.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// smallConfig rolls segments and writes index entries often, so that small
// tests exercise several segments and index lookups.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	c.RetentionMs = -1
	return c
}

func openLog(tb testing.TB, dir string, cfg Config) *Log {
	tb.Helper()
	l, err := Open(dir, cfg, quiet)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// stored is a batch as the log holds it after Append.
type stored struct {
	base, next int64
	maxTs      int64
	ts         []int64 // the records' timestamps, in offset order
	bytes      []byte
}

// appendBatches appends n batches; batch i has 1+i%3 records of size
// bytes and timestamps from ts(i). now for Append is ts(i) too.
func appendBatches(tb testing.TB, l *Log, n, size int, ts func(i int) int64) []stored {
	tb.Helper()
	return appendCounted(tb, l, n, size, ts, func(i int) int { return 1 + i%3 })
}

// appendSingles appends n one-record batches, so offsets count batches.
func appendSingles(tb testing.TB, l *Log, n, size int, ts func(i int) int64) []stored {
	tb.Helper()
	return appendCounted(tb, l, n, size, ts, func(int) int { return 1 })
}

func appendCounted(tb testing.TB, l *Log, n, size int, ts func(i int) int64, count func(i int) int) []stored {
	tb.Helper()
	out := make([]stored, 0, n)
	for i := range n {
		b := simpleBatch(tb, count(i), size, ts(i))
		base, err := l.Append(b, ts(i))
		if err != nil {
			tb.Fatalf("Append %d: %v", i, err)
		}
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset != base {
			tb.Fatalf("batch %d: base offset %d not rewritten to %d", i, h.BaseOffset, base)
		}
		times := make([]int64, count(i))
		for j := range times {
			times[j] = ts(i) + int64(j) // recs gives record j delta j
		}
		out = append(out, stored{base: base, next: h.NextOffset(), maxTs: h.MaxTimestamp, ts: times, bytes: bytes.Clone(b)})
	}
	return out
}

func tsIndex(i int) int64 { return int64(1000 + 10*i) }

// concat joins the stored batches from the one holding offset on.
func concat(batches []stored, offset int64) []byte {
	var out []byte
	for _, b := range batches {
		if b.next > offset {
			out = append(out, b.bytes...)
		}
	}
	return out
}

// checkContents checks that the log holds exactly the batches in want that
// end past its start offset, byte for byte, reading from every offset.
func checkContents(tb testing.TB, l *Log, want []stored) {
	tb.Helper()
	start, end := l.StartOffset(), l.EndOffset()
	wantEnd := start
	if len(want) > 0 {
		wantEnd = max(start, want[len(want)-1].next)
	}
	if end != wantEnd {
		tb.Fatalf("end offset %d, want %d", end, wantEnd)
	}
	for _, b := range want {
		for off := max(b.base, start); off < b.next; off++ {
			got, err := l.Read(off, 1)
			if err != nil {
				tb.Fatalf("Read(%d, 1): %v", off, err)
			}
			if !bytes.Equal(got, b.bytes) {
				tb.Fatalf("Read(%d, 1): got %d bytes, want the batch at %d (%d bytes)", off, len(got), b.base, len(b.bytes))
			}
		}
	}
	if got, err := l.Read(start, 1<<30); err != nil || !bytes.Equal(got, concat(want, start)) {
		tb.Fatalf("Read(%d, all): %d bytes, err %v; want %d bytes", start, len(got), err, len(concat(want, start)))
	}
	if got, err := l.Read(end, 100); err != nil || len(got) != 0 {
		tb.Fatalf("Read(end): %d bytes, err %v", len(got), err)
	}
	for _, off := range []int64{end + 1, start - 1} {
		if _, err := l.Read(off, 100); !errors.Is(err, ErrOffsetOutOfRange) {
			tb.Fatalf("Read(%d): err %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

// crash closes the log's files without flushing, like a killed process.
func crash(tb testing.TB, l *Log) {
	tb.Helper()
	if err := l.close(false); err != nil {
		tb.Fatal(err)
	}
}

// firstAtOrAfter is OffsetForTimestamp by brute force: the first record of
// batches at or past start whose timestamp is at least ts.
func firstAtOrAfter(batches []stored, start, ts int64) (offset, timestamp int64, ok bool) {
	for _, b := range batches {
		for j, t := range b.ts {
			if off := b.base + int64(j); off >= start && t >= ts {
				return off, t, true
			}
		}
	}
	return 0, 0, false
}

// maxAtOrAfter is MaxTimestampOffset by brute force: the first record at
// or past start with the largest timestamp of zero or more.
func maxAtOrAfter(batches []stored, start int64) (offset, timestamp int64, ok bool) {
	for _, b := range batches {
		for j, t := range b.ts {
			if off := b.base + int64(j); off >= start && t >= 0 && (!ok || t > timestamp) {
				offset, timestamp, ok = off, t, true
			}
		}
	}
	return offset, timestamp, ok
}

// checkMaxTimestamp compares MaxTimestampOffset with maxAtOrAfter.
func checkMaxTimestamp(tb testing.TB, l *Log, want []stored) {
	tb.Helper()
	wantOff, wantTs, wantOK := maxAtOrAfter(want, l.StartOffset())
	off, ts, ok, err := l.MaxTimestampOffset()
	if err != nil || ok != wantOK || (ok && (off != wantOff || ts != wantTs)) {
		tb.Fatalf("MaxTimestampOffset() = %d, %d, %v, %v; want %d, %d, %v", off, ts, ok, err, wantOff, wantTs, wantOK)
	}
}
