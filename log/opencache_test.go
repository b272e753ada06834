package log

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// tinyConfig puts every one-record batch in a segment of its own.
func tinyConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 14
	c.RetentionMs = -1
	return c
}

// openCachedLog opens a log in a fresh directory through c and appends n
// one-record batches: n segments, the last active.
func openCachedLog(tb testing.TB, c *OpenCache, n int) *Log {
	tb.Helper()
	l, err := c.Open(tb.TempDir(), tinyConfig(), quiet)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	appendSingles(tb, l, n, 1, tsIndex)
	if got := len(l.Segments()); got != n {
		tb.Fatalf("%d segments, want %d", got, n)
	}
	return l
}

// openBases lists the base offsets of l's segments whose files are open.
func openBases(l *Log) []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.cache.mu.Lock()
	defer l.cache.mu.Unlock()
	var out []int64
	for _, s := range l.segs {
		if s.segFiles != nil {
			out = append(out, s.base)
		}
	}
	return out
}

// checkCache checks the cache's bookkeeping: the idle list links both
// ways, holds only open, unreferenced segments, and no more than the
// capacity; every segment of logs is counted as open exactly when its
// files are, and the open count is the total over logs.
func checkCache(tb testing.TB, c *OpenCache, logs ...*Log) {
	tb.Helper()
	for _, l := range logs {
		l.mu.RLock()
		defer l.mu.RUnlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	var prev *segment
	for s := c.head; s != nil; prev, s = s, s.lruNext {
		n++
		if s.lruPrev != prev || !s.idle || s.refs != 0 || s.segFiles == nil || s.gone {
			tb.Fatalf("idle segment %s: prev ok %v, idle %v, refs %d, open %v, gone %v",
				s.path, s.lruPrev == prev, s.idle, s.refs, s.segFiles != nil, s.gone)
		}
	}
	if c.tail != prev || n != c.idle {
		tb.Fatalf("idle list of %d segments, count says %d (tail ok %v)", n, c.idle, c.tail == prev)
	}
	if c.idle > c.maxIdle {
		tb.Fatalf("%d idle segments, capacity %d", c.idle, c.maxIdle)
	}
	open := 0
	for _, l := range logs {
		for _, s := range l.segs {
			if s.segFiles != nil {
				open++
			}
			if s.refs < 0 || (s.refs > 0 && s.segFiles == nil) || (s.dirty && s.segFiles == nil) {
				tb.Fatalf("segment %s: refs %d, open %v, dirty %v", s.path, s.refs, s.segFiles != nil, s.dirty)
			}
		}
	}
	if open != c.open {
		tb.Fatalf("%d segments open, count says %d", open, c.open)
	}
}

// Idle segments are closed least recently used first; a read reopens a
// closed one and makes it the most recently used.
func TestOpenCacheEvictionOrder(t *testing.T) {
	c := NewOpenCache(3 * filesPerSegment)
	l := openCachedLog(t, c, 8) // segments 0..6 sealed, 7 active
	if got := openBases(l); len(got) != 8 {
		t.Fatalf("before the flush %v are open; every segment is dirty and must be", got)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		read int64 // -1: none
		want []int64
	}{
		{-1, []int64{4, 5, 6, 7}}, // the flush released 0..6 in order
		{0, []int64{0, 5, 6, 7}},  // 0 reopened, 4 the least recent
		{5, []int64{0, 5, 6, 7}},  // a hit: 5 most recent
		{1, []int64{0, 1, 5, 7}},  // 6 is now the least recent
		{6, []int64{1, 5, 6, 7}},
		{7, []int64{1, 5, 6, 7}}, // the active segment is never idle
		{0, []int64{0, 1, 6, 7}},
	}
	for i, st := range steps {
		if st.read >= 0 {
			if _, err := l.Read(st.read, 1); err != nil {
				t.Fatalf("step %d: Read(%d): %v", i, st.read, err)
			}
		}
		if got := openBases(l); !slices.Equal(got, st.want) {
			t.Fatalf("step %d (read %d): open %v, want %v", i, st.read, got, st.want)
		}
		checkCache(t, c, l)
	}
	if s := c.Stats(); s.Opens != 4 || s.Evictions != 4+4 || s.IdleSegments != 3 || s.OpenSegments != 4 {
		t.Fatalf("stats %+v", s)
	}
}

// A referenced segment is never closed, however many others are opened,
// and is idle again once released.
func TestOpenCacheRefsPin(t *testing.T) {
	c := NewOpenCache(2 * filesPerSegment)
	l := openCachedLog(t, c, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	pinned := l.segs[0]
	if err := c.acquire(pinned); err != nil {
		t.Fatal(err)
	}
	if err := c.acquire(pinned); err != nil { // twice: two readers
		t.Fatal(err)
	}
	for off := range int64(9) {
		if _, err := l.Read(off, 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := openBases(l); !slices.Equal(got, []int64{0, 7, 8, 9}) {
		t.Fatalf("open %v, want the pinned 0, the two most recent and the active 9", got)
	}
	checkCache(t, c, l)
	c.release(pinned)
	if got := openBases(l); got[0] != 0 {
		t.Fatalf("open %v after one of two releases", got)
	}
	c.release(pinned)
	if got := openBases(l); !slices.Equal(got, []int64{0, 8, 9}) {
		t.Fatalf("open %v, want 0 most recent, then 8, and the active 9", got)
	}
	checkCache(t, c, l)
}

// Dirty segments stay open until fsynced, whatever the capacity; past
// maxHeldSealed of them the writer fsyncs them itself.
func TestOpenCacheHoldsDirtySegments(t *testing.T) {
	c := NewOpenCache(1)
	l := openCachedLog(t, c, 10)
	if got := len(openBases(l)); got != 10 {
		t.Fatalf("%d segments open before any flush, want all 10", got)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := openBases(l); !slices.Equal(got, []int64{8, 9}) {
		t.Fatalf("open after Sync %v, want one idle and the active", got)
	}
	checkCache(t, c, l)
	appendSingles(t, l, 3*maxHeldSealed, 1, tsIndex)
	held := 0
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.held {
			held++
		} else if s.dirty {
			t.Fatalf("segment %d dirty but not held", s.base)
		}
	}
	if held == 0 || held > maxHeldSealed {
		t.Fatalf("%d sealed segments held, want 1..%d", held, maxHeldSealed)
	}
	if got, want := len(openBases(l)), held+2; got != want {
		t.Fatalf("%d segments open, want %d held, one idle and the active", got, held)
	}
	checkCache(t, c, l)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := len(openBases(l)); got != 2 {
		t.Fatalf("%d segments open after Flush, want 2", got)
	}
}

// Shrinking the capacity closes idle segments at once; Close and
// retention leave nothing open.
func TestOpenCacheCapacity(t *testing.T) {
	c := NewOpenCache(50 * filesPerSegment)
	l := openCachedLog(t, c, 40)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.IdleSegments != 39 || s.OpenSegments != 40 || s.Capacity != 150 {
		t.Fatalf("stats %+v", s)
	}
	c.SetCapacity(10 * filesPerSegment)
	if s := c.Stats(); s.IdleSegments != 10 || s.OpenSegments != 11 {
		t.Fatalf("stats after shrinking %+v", s)
	}
	for off := range int64(40) {
		if _, err := l.Read(off, 1); err != nil {
			t.Fatal(err)
		}
		checkCache(t, c, l)
	}
	if err := l.AdvanceStartOffset(35); err != nil {
		t.Fatal(err)
	}
	checkCache(t, c, l)
	if s := c.Stats(); s.OpenSegments != 5 {
		t.Fatalf("stats after retention %+v: want 35..39 open", s)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.OpenSegments != 0 || s.IdleSegments != 0 {
		t.Fatalf("stats after Close %+v", s)
	}
}

// Two logs share a tiny cache under readers of every kind, writers that
// roll, sync, truncate and apply retention, and the race detector.
func TestOpenCacheConcurrent(t *testing.T) {
	c := NewOpenCache(2 * filesPerSegment)
	logs := []*Log{openCachedLog(t, c, 60), openCachedLog(t, c, 60)}
	for _, l := range logs {
		l.SetConfig(Config{SegmentBytes: 14, RetentionMs: -1, RetentionBytes: 70 * 80})
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w, l := range logs {
		wg.Go(func() {
			defer done.Store(true)
			for i := range 400 {
				if _, err := l.Append(simpleBatch(t, 1, 1+i%50, tsIndex(i)), tsIndex(i)); err != nil {
					report(err)
					return
				}
				var err error
				switch {
				case i%20 == 0:
					err = l.Sync()
				case i%31 == 0:
					_, err = l.ApplyRetention(0)
				case i%97 == 0:
					err = l.Truncate(l.EndOffset() - int64(1+w))
				case i%50 == 0:
					err = l.Flush()
				}
				if err != nil {
					report(fmt.Errorf("writer %d at %d: %w", w, i, err))
					return
				}
			}
		})
	}
	for r := range 6 {
		l := logs[r%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			for !done.Load() {
				start, end := l.StartOffset(), l.EndOffset()
				off := start + rng.Int64N(end-start+1)
				var err error
				switch r / 2 {
				case 0:
					var b []byte
					if b, err = l.Read(off, int32(rng.IntN(2000))); err == nil {
						err = checkBatches(b, off)
					}
				case 1:
					var fr *FileRange
					if _, fr, _, err = l.ReadRange(off, int32(rng.IntN(2000)), end, rng.IntN(100), nil); fr != nil {
						fr.Close()
					}
				default:
					if _, _, _, err = l.OffsetForTimestamp(tsIndex(rng.IntN(400))); err == nil {
						_, _, _, err = l.MaxTimestampOffset()
					}
				}
				if errors.Is(err, ErrOffsetOutOfRange) && off < l.StartOffset() {
					continue // retention passed it
				}
				if err != nil {
					report(fmt.Errorf("reader %d at %d: %w", r, off, err))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCache(t, c, logs...)
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s := c.Stats(); s.OpenSegments != 0 || s.Opens == 0 || s.Evictions == 0 {
		t.Fatalf("stats after Close %+v", s)
	}
}
