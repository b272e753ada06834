package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// flushedLog writes n batches over several segments and closes the log
// cleanly, so that every segment lies below the recovery point.
func flushedLog(tb testing.TB, n int) (string, []stored, []SegmentInfo) {
	tb.Helper()
	dir := tb.TempDir()
	l := openLog(tb, dir, smallConfig())
	batches := appendBatches(tb, l, n, 150, tsIndex)
	segs := l.Segments()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	if len(segs) < 3 {
		tb.Fatalf("fixture needs 3 segments, has %d", len(segs))
	}
	return dir, batches, segs
}

// flipIn flips one bit of the CRC-covered bytes (past the attributes
// field) of the first batch of segs[i] that starts after its first, and
// returns that batch.
func flipIn(tb testing.TB, batches []stored, segs []SegmentInfo, i int) stored {
	tb.Helper()
	seg := segs[i]
	for _, b := range batches {
		if b.base > seg.BaseOffset && b.next <= seg.NextOffset {
			_, pos := position(batches, segs, b)
			at := pos + BatchHeaderSize + int64(len(b.bytes)-BatchHeaderSize)/2
			patchFile(tb, seg.Path, at, []byte{b.bytes[at-pos] ^ 0x10})
			return b
		}
	}
	tb.Fatalf("segment %d holds no second batch", i)
	return stored{}
}

// damageRecorder is a damage handler that records what it is told.
type damageRecorder struct {
	mu   sync.Mutex
	errs []error
}

func (r *damageRecorder) handle(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *damageRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

func TestVerifyCleanLog(t *testing.T) {
	dir, batches, _ := flushedLog(t, 60)
	l := openLog(t, dir, smallConfig())
	if u := l.Unverified(); u != l.Size() {
		t.Fatalf("after a clean reopen %d of %d bytes unverified, want all", u, l.Size())
	}
	if err := l.VerifyAll(context.Background(), nil); err != nil {
		t.Fatalf("VerifyAll: %v", err)
	}
	st := l.VerifyStats()
	if st.Bytes != l.Size() || st.Segments != int64(len(l.Segments())) || st.Damaged != 0 {
		t.Fatalf("stats %+v; want %d bytes, %d segments, none damaged", st, l.Size(), len(l.Segments()))
	}
	if u := l.Unverified(); u != 0 {
		t.Fatalf("%d bytes unverified after VerifyAll", u)
	}
	checkContents(t, l, batches)
	if got := l.VerifyStats(); got != st {
		t.Fatalf("reads verified again: %+v, then %+v", st, got)
	}
	// What this process writes is verified.
	more := appendBatches(t, l, 40, 150, tsIndex)
	if u := l.Unverified(); u != 0 {
		t.Fatalf("%d bytes unverified after appends", u)
	}
	checkContents(t, l, append(batches, more...))
}

func TestDamagedSealedSegmentIsNeverServed(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	victim := flipIn(t, batches, segs, 1)
	l := openLog(t, dir, smallConfig())
	var rec damageRecorder
	l.SetDamageHandler(rec.handle)

	// The segment before it is clean and served...
	if got, err := l.Read(segs[0].BaseOffset, 1); err != nil || !bytes.Equal(got, batches[0].bytes) {
		t.Fatalf("Read of the clean first segment: %d bytes, %v", len(got), err)
	}
	// ...but no read that reaches the damaged one: not its first batch,
	// not the damaged one, not a read from the clean segment that spans it.
	for _, tc := range []struct {
		name     string
		off      int64
		maxBytes int32
	}{
		{"its first batch", segs[1].BaseOffset, 1},
		{"the damaged batch", victim.base, 1},
		{"a read spanning into it", segs[0].BaseOffset, 1 << 20},
	} {
		got, err := l.Read(tc.off, tc.maxBytes)
		if !errors.Is(err, ErrDamaged) || got != nil {
			t.Fatalf("Read %s (%d): %d bytes, %v; want ErrDamaged and nothing", tc.name, tc.off, len(got), err)
		}
	}
	for _, minFile := range []int{0, 1 << 30} { // sendfile, and read into memory
		data, fr, _, err := l.ReadRange(victim.base, 1<<20, l.EndOffset(), minFile, nil)
		if !errors.Is(err, ErrDamaged) || data != nil || fr != nil {
			t.Fatalf("ReadRange(minFile %d): %d bytes, range %v, %v; want ErrDamaged and nothing", minFile, len(data), fr, err)
		}
	}
	if err := l.VerifyAll(context.Background(), nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("VerifyAll: %v, want ErrDamaged", err)
	}
	if n := rec.count(); n != 1 {
		t.Fatalf("damage handler called %d times, want once", n)
	}
	if st := l.VerifyStats(); st.Damaged != 1 {
		t.Fatalf("stats %+v, want one damaged segment", st)
	}
	// The segment after it is clean and served.
	if got, err := l.Read(segs[2].BaseOffset, 1); err != nil || len(got) == 0 {
		t.Fatalf("Read of the clean third segment: %d bytes, %v", len(got), err)
	}
}

func TestVerifyAllFindsDamage(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	flipIn(t, batches, segs, 2)
	l := openLog(t, dir, smallConfig())
	var rec damageRecorder
	l.SetDamageHandler(rec.handle)
	err := l.VerifyAll(context.Background(), nil)
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("VerifyAll: %v, want ErrDamaged", err)
	}
	if rec.count() != 1 || !errors.Is(rec.errs[0], ErrDamaged) {
		t.Fatalf("damage handler got %v", rec.errs)
	}
	t.Logf("%v", err)
	if _, err := l.Read(segs[2].BaseOffset, 1); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Read after VerifyAll: %v, want ErrDamaged", err)
	}
}

// TestDamageBelowRecoveryPointInActiveSegment: the segment that holds the
// recovery point is scanned at Open from that point on only; what lies
// below it is verified before it is served, while what is appended after
// Open is served without waiting.
func TestDamageBelowRecoveryPointInActiveSegment(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	last := len(segs) - 1
	victim := flipIn(t, batches, segs, last)
	l := openLog(t, dir, smallConfig())
	end := l.EndOffset()
	more := appendBatches(t, l, 2, 150, tsIndex)
	if got, err := l.Read(end, 1<<20); err != nil || !bytes.Equal(got, concat(more, end)) {
		t.Fatalf("Read of the batches appended after Open: %d bytes, %v", len(got), err)
	}
	if st := l.VerifyStats(); st.Bytes != 0 {
		t.Fatalf("a read of new batches verified %d bytes", st.Bytes)
	}
	if got, err := l.Read(victim.base, 1); !errors.Is(err, ErrDamaged) || got != nil {
		t.Fatalf("Read(%d): %d bytes, %v; want ErrDamaged", victim.base, len(got), err)
	}
}

// TestDamagedFramingIsDamage: a base offset is outside the CRC; changed,
// the batches no longer follow each other, which is damage too.
func TestDamagedFramingIsDamage(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	var victim stored
	for _, b := range batches {
		if b.base > segs[0].BaseOffset && b.next < segs[0].NextOffset {
			victim = b
			break
		}
	}
	_, pos := position(batches, segs, victim)
	patchFile(t, segs[0].Path, pos+7, []byte{victim.bytes[7] ^ 0x04})
	l := openLog(t, dir, smallConfig())
	if err := l.VerifyAll(context.Background(), nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("VerifyAll: %v, want ErrDamaged", err)
	}
}

// TestFirstReadersVerifyOnce: readers that meet an unverified segment at
// once wait for one verification of it; none is served before it ends.
func TestFirstReadersVerifyOnce(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	l := openLog(t, dir, smallConfig())
	const readers = 16
	var wg sync.WaitGroup
	var bad atomic.Int32
	start := make(chan struct{})
	for r := range readers {
		wg.Go(func() {
			<-start
			if r%2 == 0 {
				got, err := l.Read(segs[1].BaseOffset, 1)
				if err != nil || len(got) == 0 {
					bad.Add(1)
				}
				return
			}
			data, fr, _, err := l.ReadRange(segs[1].BaseOffset, 1<<20, l.EndOffset(), 0, nil)
			if err != nil || (data == nil && fr == nil) {
				bad.Add(1)
			}
			if fr != nil {
				fr.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d reads failed", bad.Load())
	}
	if st := l.VerifyStats(); st.Segments != 1 || st.Bytes != segs[1].Size {
		t.Fatalf("stats %+v; want the one segment (%d bytes) verified once", st, segs[1].Size)
	}
	checkContents(t, l, batches)
}

// TestDamagedFirstReaders: concurrent first readers of a damaged segment
// all get ErrDamaged, and the handler hears of it once.
func TestDamagedFirstReaders(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	victim := flipIn(t, batches, segs, 1)
	l := openLog(t, dir, smallConfig())
	var rec damageRecorder
	l.SetDamageHandler(rec.handle)
	var wg sync.WaitGroup
	var served atomic.Int32
	for range 8 {
		wg.Go(func() {
			if got, err := l.Read(victim.base, 1<<20); !errors.Is(err, ErrDamaged) || got != nil {
				served.Add(1)
			}
		})
	}
	wg.Go(func() {
		if err := l.VerifyAll(context.Background(), nil); !errors.Is(err, ErrDamaged) {
			served.Add(1)
		}
	})
	wg.Wait()
	if served.Load() > 0 || rec.count() != 1 {
		t.Fatalf("%d calls did not fail with ErrDamaged; handler called %d times", served.Load(), rec.count())
	}
}

// TestVerifyBesideTruncate: a truncation below the recovery point cuts
// into unverified batches; the batches appended after it are this
// process's own, and verification reads what is there now.
func TestVerifyBesideTruncate(t *testing.T) {
	dir, batches, segs := flushedLog(t, 60)
	l := openLog(t, dir, smallConfig())
	last := segs[len(segs)-1]
	var cut stored
	for _, b := range batches {
		if b.base > last.BaseOffset {
			cut = b
			break
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for range 50 {
			if err := l.VerifyAll(context.Background(), nil); err != nil {
				errs <- err
				return
			}
		}
	})
	if err := l.Truncate(cut.base); err != nil {
		t.Fatal(err)
	}
	want := append(before(batches, cut.base), appendBatches(t, l, 30, 150, tsIndex)...)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("VerifyAll beside Truncate: %v", err)
	}
	if err := l.VerifyAll(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	checkContents(t, l, want)
}

// TestVerifyAllPacesAndStops: VerifyAll calls its pace between chunks and
// stops at its context's end, leaving the rest unverified.
func TestVerifyAllPacesAndStops(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.SegmentBytes = 8 << 20
	l := openLog(t, dir, cfg)
	appendBatches(t, l, 200, 16<<10, tsIndex) // ~6 MiB
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := l.VerifyAll(ctx, func(ctx context.Context, n int64) error {
		if calls++; calls == 2 {
			cancel()
		}
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Fatalf("VerifyAll: %v after %d paces; want context.Canceled after 2", err, calls)
	}
	if l.Unverified() == 0 {
		t.Fatal("a cancelled VerifyAll left nothing unverified")
	}
	if err := l.VerifyAll(context.Background(), nil); err != nil || l.Unverified() != 0 {
		t.Fatalf("VerifyAll: %v, %d bytes left", err, l.Unverified())
	}
}

func TestVerifyAllClosed(t *testing.T) {
	dir, _, _ := flushedLog(t, 30)
	l, err := Open(dir, smallConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.VerifyAll(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("VerifyAll on a closed log: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
