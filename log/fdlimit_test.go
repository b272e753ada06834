//go:build linux

package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The 10,000-segment test runs in a child process (this test binary run
// again) so that its lowered RLIMIT_NOFILE, and the default open-file
// cache sized from it, touch nothing else.
const (
	fdChildEnv      = "BROKERD_LOG_FDLIMIT_CHILD"
	fdLimit         = 4096
	fdLimitSegments = 10000
)

// openFDs counts the process's open descriptors.
func openFDs(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatalf("count open files: %v", err)
	}
	return len(ents) - 1 // the directory read itself
}

// A log of 10,000 segments works under a 4096-descriptor limit: appends,
// Sync, reads from every offset (ReadRange's duplicated descriptors too),
// reads beside the writer, a restart and a crash recovery, retention,
// Flush and Close; and the process never holds more than half the limit.
func TestManySegmentsUnderFileLimit(t *testing.T) {
	if os.Getenv(fdChildEnv) == "" {
		if testing.Short() {
			t.Skip("10,000 segments in a child process")
		}
		start := time.Now()
		cmd := exec.Command(os.Args[0], "-test.run=^TestManySegmentsUnderFileLimit$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), fdChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return
	}

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = fdLimit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	base := openFDs(t)
	peak := 0
	check := func(stage string) {
		t.Helper()
		n := openFDs(t)
		peak = max(peak, n)
		if n > fdLimit/2 {
			t.Fatalf("%s: %d open descriptors, more than half the limit of %d", stage, n, fdLimit)
		}
	}

	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 14 // as small as Kafka allows: one batch per segment
	cfg.RetentionMs = -1
	began := time.Now()
	l, err := Open(dir, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var batches []stored
	appendN := func(n int) {
		t.Helper()
		for i := range n {
			ts := tsIndex(len(batches))
			b := simpleBatch(t, 1, 1, ts)
			off, err := l.Append(b, ts)
			if err != nil {
				t.Fatalf("Append %d: %v", len(batches), err)
			}
			batches = append(batches, stored{base: off, next: off + 1, maxTs: ts, bytes: bytes.Clone(b)})
			// A checkpoint now and then, as the FSM's checkpoint job does.
			if i%500 == 499 {
				if err := l.Sync(); err != nil {
					t.Fatalf("Sync: %v", err)
				}
				check(fmt.Sprintf("append %d", len(batches)))
			}
		}
	}
	appendN(fdLimitSegments)
	if n := len(l.Segments()); n != fdLimitSegments {
		t.Fatalf("%d segments, want %d", n, fdLimitSegments)
	}
	t.Logf("appended %d segments in %v", fdLimitSegments, time.Since(began).Round(time.Millisecond))

	readAll := func(stage string) {
		t.Helper()
		start := l.StartOffset()
		for _, b := range batches {
			if b.base < start {
				continue
			}
			got, err := l.Read(b.base, 1)
			if err != nil || !bytes.Equal(got, b.bytes) {
				t.Fatalf("%s: Read(%d): %d bytes, %v", stage, b.base, len(got), err)
			}
		}
		// A read across many segments, old to new.
		got, err := l.Read(start, 1<<20)
		if err != nil || !bytes.Equal(got, concat(batches, start)) {
			t.Fatalf("%s: Read(%d, all): %d bytes, %v", stage, start, len(got), err)
		}
		check(stage)
	}
	readAll("read every offset")

	// The sendfile path: 1000 ranges of old segments held at once, each
	// with its own descriptor, as a broker's fetches may hold them.
	var ranges []*FileRange
	for i := 0; i < 1000; i++ {
		b := batches[i*7]
		data, fr, _, err := l.ReadRange(b.base, 1<<20, l.EndOffset(), 0, nil)
		if err != nil || data != nil || fr == nil {
			t.Fatalf("ReadRange(%d): data %d bytes, range %v, %v", b.base, len(data), fr, err)
		}
		ranges = append(ranges, fr)
	}
	check("1000 file ranges held")
	for i, fr := range ranges {
		buf := make([]byte, fr.Len)
		if err := readRange(fr, buf); err != nil || !bytes.Equal(buf, batches[i*7].bytes) {
			t.Fatalf("file range %d: %v", i, err)
		}
		if err := fr.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Readers at random offsets, old and new, beside the writer.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				off := rng.Int64N(fdLimitSegments)
				var err error
				if r%2 == 0 {
					var b []byte
					if b, err = l.Read(off, 4096); err == nil {
						err = checkBatches(b, off)
					}
				} else {
					var fr *FileRange
					if _, fr, _, err = l.ReadRange(off, 4096, off+10, 0, nil); fr != nil {
						fr.Close()
					}
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d at %d: %w", r, off, err)
					return
				}
			}
		})
	}
	appendN(1000)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check("concurrent reads")

	// A restart: Open trusts what the last flush covered.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
	began = time.Now()
	if l, err = Open(dir, cfg, quiet); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Logf("reopened %d segments in %v", len(l.Segments()), time.Since(began).Round(time.Millisecond))
	check("reopened")
	readAll("after restart")

	// A crash: the segments past the last Sync are scanned.
	appendN(700)
	if err := l.close(false); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir, cfg, quiet); err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	check("recovered")
	readAll("after crash")

	// Retention by size, then DeleteRecords, each removing thousands.
	l.SetConfig(Config{SegmentBytes: 14, RetentionMs: -1, RetentionBytes: int64(len(batches[0].bytes)) * 8000})
	if n, err := l.ApplyRetention(0); err != nil || n == 0 {
		t.Fatalf("ApplyRetention: %d, %v", n, err)
	}
	if err := l.AdvanceStartOffset(l.StartOffset() + 3000); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(l.StartOffset()-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	readAll("after retention")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > base+3 {
		t.Fatalf("%d descriptors open after Close, %d before the log", n, base)
	}
	t.Logf("peak open descriptors %d (limit %d, %d at start)", peak, fdLimit, base)
}
