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

// fastTempDir is a temporary directory in /dev/shm when it is a tmpfs
// with room to spare, else in the usual place: this test is about
// descriptors, and tens of thousands of fsyncs and unlinks on a disk
// would only make it slow.
func fastTempDir(t *testing.T) string {
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != tmpfsMagic || st.Bavail*uint64(st.Bsize) < 1<<30 {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "brokerd-log-fdlimit-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

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
	if c, want := DefaultOpenCache().Stats().Capacity, fdLimit/4/filesPerSegment*filesPerSegment; c != want {
		t.Fatalf("default cache capacity %d files, want a quarter of the limit in whole segments, %d", c, want)
	}
	base := openFDs(t)
	peak, ownPeak := 0, 0
	// The log's own descriptors stay within the cache's quarter of the
	// limit plus what is in use: the active segment, the sealed ones not
	// yet fsynced, the reads in progress. Descriptors handed out by
	// ReadRange (extra) are the caller's, bounded by the broker.
	ownMax := fdLimit/4 + filesPerSegment*(maxHeldSealed+1+8) + 16
	check := func(stage string, extra int) {
		t.Helper()
		n := openFDs(t)
		peak = max(peak, n)
		own := n - base - extra
		ownPeak = max(ownPeak, own)
		if own > ownMax {
			t.Fatalf("%s: the log holds %d descriptors, more than %d", stage, own, ownMax)
		}
		if n > fdLimit*3/4 {
			t.Fatalf("%s: %d open descriptors, limit %d", stage, n, fdLimit)
		}
	}

	dir := fastTempDir(t)
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
				check(fmt.Sprintf("append %d", len(batches)), 0)
			}
		}
	}
	appendN(fdLimitSegments)
	if n := len(l.Segments()); n != fdLimitSegments {
		t.Fatalf("%d segments, want %d", n, fdLimitSegments)
	}
	t.Logf("appended %d segments in %v", fdLimitSegments, time.Since(began).Round(time.Millisecond))

	// readAll reads every step-th offset one by one, then all of them in
	// one read across every segment.
	readAll := func(stage string, step int) {
		t.Helper()
		start := l.StartOffset()
		for i, b := range batches {
			if b.base < start || i%step != 0 {
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
		check(stage, 0)
	}
	readAll("read every offset", 1)

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
	check("1000 file ranges held", len(ranges))
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
					if b, err = l.Read(off, 512); err == nil {
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
	check("concurrent reads", 0)

	// A restart: Open trusts what the last flush covered.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed", 0)
	began = time.Now()
	if l, err = Open(dir, cfg, quiet); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Logf("reopened %d segments in %v", len(l.Segments()), time.Since(began).Round(time.Millisecond))
	check("reopened", 0)
	readAll("after restart", 5)

	// A crash: the segments past the last Sync are scanned.
	appendN(700)
	if err := l.close(false); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir, cfg, quiet); err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	check("recovered", 0)
	readAll("after crash", 5)

	// As after a snapshot install: no recovery point, so Open scans every
	// segment and rebuilds the indexes that are gone.
	segs := l.Segments()
	if err := l.close(false); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs[:len(segs)/2] {
		os.Remove(segmentPath(dir, s.BaseOffset, indexSuffix))
		os.Remove(segmentPath(dir, s.BaseOffset, timeIndexSuffix))
	}
	if err := WriteInstallCheckpoint(dir, 0, segs); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if l, err = Open(dir, cfg, quiet); err != nil {
		t.Fatalf("open with every segment to scan: %v", err)
	}
	t.Logf("scanned and reopened %d segments in %v", len(l.Segments()), time.Since(began).Round(time.Millisecond))
	check("scanned", 0)
	readAll("after a full scan", 5)

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
	readAll("after retention", 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > base+3 {
		t.Fatalf("%d descriptors open after Close, %d before the log", n, base)
	}
	st := DefaultOpenCache().Stats()
	if st.Opens == 0 || st.Evictions == 0 || st.LimitHits != 0 {
		t.Fatalf("cache stats %+v: want lazy opens and evictions, and no descriptor shortage", st)
	}
	t.Logf("peak open descriptors %d (limit %d, %d at start), of which the log's own at most %d; cache %+v",
		peak, fdLimit, base, ownPeak, st)
}

// fillDescriptors lowers the soft limit on open files to just above the
// highest descriptor in use and opens /dev/null until only free remain
// below it. undo closes what it opened and restores the limit.
func fillDescriptors(t *testing.T, free int) (undo func()) {
	t.Helper()
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	highest := 0
	for _, e := range ents {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil {
			highest = max(highest, fd)
		}
	}
	lim := orig
	lim.Cur = uint64(highest + 1 + free)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var fillers []*os.File
	undo = func() {
		for _, f := range fillers {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
			t.Fatal(err)
		}
	}
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				undo()
				t.Fatal(err)
			}
			break
		}
		fillers = append(fillers, f)
	}
	for range free {
		fillers[len(fillers)-1].Close()
		fillers = fillers[:len(fillers)-1]
	}
	return undo
}

// When the process is out of descriptors, a read of a closed segment
// closes idle segments and tries again; with none to close it fails with
// an error that says so, and the log goes on working once there is room.
func TestOpenCacheOutOfDescriptors(t *testing.T) {
	c := NewOpenCache(100 * filesPerSegment)
	l := openCachedLog(t, c, 60)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	c.SetCapacity(50 * filesPerSegment) // 0..8 closed, 9..58 idle

	undo := fillDescriptors(t, filesPerSegment-1)
	got, err := l.Read(0, 1)
	undo()
	if err != nil || len(got) == 0 {
		t.Fatalf("Read with idle segments to close: %d bytes, %v", len(got), err)
	}
	if s := c.Stats(); s.LimitHits != 1 || s.IdleSegments > 26 {
		t.Fatalf("stats %+v: want one limit hit and half the idle segments closed", s)
	}

	// Every open segment in use: nothing to close.
	var pinned []*segment
	for _, s := range l.segs {
		if c.pin(s) {
			pinned = append(pinned, s)
		}
	}
	closed := l.segs[1]
	if closed.segFiles != nil {
		t.Fatal("segment 1 is open")
	}
	undo = fillDescriptors(t, filesPerSegment-1)
	_, err = l.Read(closed.base, 1)
	_, _, _, rerr := l.ReadRange(closed.base, 100, l.EndOffset(), 0, nil)
	undo()
	if !errors.Is(err, syscall.EMFILE) || !errors.Is(rerr, syscall.EMFILE) {
		t.Fatalf("Read and ReadRange out of descriptors: %v; %v; want EMFILE", err, rerr)
	}
	releaseAll(c, pinned)
	checkCache(t, c, l)
	if got, err := l.Read(closed.base, 1); err != nil || len(got) == 0 {
		t.Fatalf("Read once there is room: %d bytes, %v", len(got), err)
	}
	if _, err := l.Append(simpleBatch(t, 1, 1, 0), 0); err != nil {
		t.Fatal(err)
	}
}
