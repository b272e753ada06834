package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestAppendReadEveryOffset(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	if l.StartOffset() != 0 || l.EndOffset() != 0 {
		t.Fatalf("empty log: start %d end %d", l.StartOffset(), l.EndOffset())
	}
	if got, err := l.Read(0, 100); err != nil || len(got) != 0 {
		t.Fatalf("Read empty: %d bytes, %v", len(got), err)
	}
	batches := appendBatches(t, l, 60, 150, tsIndex)
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	checkContents(t, l, batches)
	var size int64
	for _, b := range batches {
		size += int64(len(b.bytes))
	}
	if l.Size() != size {
		t.Fatalf("Size %d, want %d", l.Size(), size)
	}
}

func TestReadMaxBytes(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	l := openLog(t, t.TempDir(), cfg)
	batches := appendSingles(t, l, 10, 100, func(i int) int64 { return int64(i) })
	size := len(batches[0].bytes) // every batch here has one record
	tests := []struct {
		name     string
		offset   int64
		maxBytes int32
		want     int // batches
	}{
		{"zero returns first batch", 0, 0, 1},
		{"negative returns first batch", 0, -5, 1},
		{"below one batch", 0, int32(size - 1), 1},
		{"exactly one", 0, int32(size), 1},
		{"one and a bit", 0, int32(size + 1), 1},
		{"exactly three", 0, int32(3 * size), 3},
		{"three and a half", 0, int32(3*size + size/2), 3},
		{"all", 0, 1 << 30, 10},
		{"from the middle", 7, 1 << 30, 3},
		{"last", 9, int32(size), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Read(tt.offset, tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			want := concat(batches, tt.offset)[:tt.want*size]
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func TestReadSpansSegments(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	batches := appendBatches(t, l, 40, 300, tsIndex)
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	// A read starting near the end of the first segment continues into
	// the next ones.
	off := segs[1].BaseOffset - 1
	got, err := l.Read(off, 3*int32(segs[0].Size))
	if err != nil {
		t.Fatal(err)
	}
	want := concat(batches, off)
	if len(got) <= int(segs[0].Size)/4 || !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("got %d bytes, not a prefix of the %d expected", len(got), len(want))
	}
}

func TestSegmentFiles(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	appendBatches(t, l, 40, 300, tsIndex)
	segs := l.Segments()
	for i, s := range segs {
		name := filepath.Base(s.Path)
		if want := segmentPath(dir, s.BaseOffset, logSuffix); s.Path != want || len(name) != 24 {
			t.Errorf("segment %d path %s, want %s", i, s.Path, want)
		}
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentPath(dir, s.BaseOffset, suffix)); err != nil {
				t.Errorf("segment %d: %v", i, err)
			}
		}
		if i > 0 && segs[i-1].NextOffset != s.BaseOffset {
			t.Errorf("segment %d starts at %d, previous ends at %d", i, s.BaseOffset, segs[i-1].NextOffset)
		}
		if i < len(segs)-1 && s.Size > smallConfig().SegmentBytes {
			t.Errorf("segment %d holds %d bytes, more than segment.bytes", i, s.Size)
		}
	}
}

func TestRoll(t *testing.T) {
	batch := simpleBatch(t, 1, 100, 0)
	size := int64(len(batch))
	tests := []struct {
		name string
		cfg  func(*Config)
		now  []int64 // one append per entry
		want []int   // batches per segment
	}{
		{"segment.bytes", func(c *Config) { c.SegmentBytes = 3 * size }, make([]int64, 7), []int{3, 3, 1}},
		{"segment.bytes smaller than a batch", func(c *Config) { c.SegmentBytes = size / 2 }, make([]int64, 3), []int{1, 1, 1}},
		{"segment.ms", func(c *Config) { c.SegmentMs = 1000 },
			[]int64{0, 500, 999, 1000, 1500, 1999, 2000, 5000, 5001}, []int{3, 3, 1, 2}},
		{"segment.ms counts from the first append", func(c *Config) { c.SegmentMs = 1000 },
			[]int64{10_000, 10_900, 11_000}, []int{2, 1}},
		// Two offset entries, one time entry: with an index entry for
		// every batch after the first, the time index fills at batch 2.
		{"index full", func(c *Config) { c.IndexIntervalBytes = 0; c.SegmentIndexBytes = 16 },
			[]int64{1, 2, 3, 4, 5}, []int{2, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.cfg(&cfg)
			l := openLog(t, t.TempDir(), cfg)
			for i, now := range tt.now {
				b := simpleBatch(t, 1, 100, now)
				if _, err := l.Append(b, now); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			var got []int
			for _, s := range l.Segments() {
				got = append(got, int(s.NextOffset-s.BaseOffset))
			}
			if !equalInts(got, tt.want) {
				t.Fatalf("batches per segment %v, want %v", got, tt.want)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSegmentMsSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	l := openLog(t, dir, cfg)
	appendBatches(t, l, 2, 10, func(i int) int64 { return int64(100 + i) })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	appendBatches(t, l, 1, 10, func(int) int64 { return 1100 })
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("%d segments after an append 1000 ms after the first, want 2", n)
	}
}

// TestSegmentMsSurvivesRestartAndTruncate checks that every segment's
// created time survives a restart: once a truncation makes a sealed
// segment active again, segment.ms rolls it at the same point as on a log
// that was never reopened, so replicas keep identical segments.
func TestSegmentMsSurvivesRestartAndTruncate(t *testing.T) {
	tests := []struct {
		name string
		// pick chooses the truncation point given the batches and segments.
		pick func(b []stored, s []SegmentInfo) int64
		// rollAt is the append after the truncation that rolls a new
		// segment; -1 for none.
		rollAt int
	}{
		// Segment 1 keeps its first append, 900 ms before the first
		// append below: the third one (+1000 ms) rolls.
		{"inside a sealed segment", func(b []stored, s []SegmentInfo) int64 {
			i := slices.IndexFunc(b, func(b stored) bool { return b.base == s[1].BaseOffset })
			return b[i+1].base
		}, 2},
		// Segment 2 is emptied: the first append below restarts its clock.
		{"segment boundary", func(_ []stored, s []SegmentInfo) int64 { return s[2].BaseOffset }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.SegmentMs = 1000
			ref := openLog(t, t.TempDir(), cfg) // never reopened
			dir := t.TempDir()
			l := openLog(t, dir, cfg)
			batches := appendBatches(t, ref, 40, 150, tsIndex)
			appendBatches(t, l, 40, 150, tsIndex)
			segs := l.Segments()
			if len(segs) < 4 {
				t.Fatalf("%d segments, want at least 4", len(segs))
			}
			if err := ref.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, cfg)

			cut := tt.pick(batches, segs)
			for _, l := range []*Log{ref, l} {
				if err := l.Truncate(cut); err != nil {
					t.Fatalf("Truncate(%d): %v", cut, err)
				}
			}
			// One-offset appends from 900 ms after the first append to the
			// segment now active, 50 ms apart.
			active := segs[slices.IndexFunc(segs, func(s SegmentInfo) bool { return s.NextOffset > cut })]
			first := batches[slices.IndexFunc(batches, func(b stored) bool { return b.base == active.BaseOffset })].ts[0]
			now := func(i int) int64 { return first + cfg.SegmentMs - 100 + 50*int64(i) }
			appendSingles(t, ref, 5, 10, now)
			appendSingles(t, l, 5, 10, now)

			want := segmentBounds(ref)
			wantBase := active.BaseOffset
			if tt.rollAt >= 0 {
				wantBase = cut + int64(tt.rollAt)
			}
			if last := want[len(want)-1]; last[0] != wantBase || last[1] != cut+5 {
				t.Fatalf("reference log ends with segment %v, want [%d %d]", last, wantBase, cut+5)
			}
			if got := segmentBounds(l); !slices.Equal(got, want) {
				t.Fatalf("segments after reopen and truncate %v, want %v", got, want)
			}
		})
	}
}

// segmentBounds lists the segments' base and next offsets.
func segmentBounds(l *Log) [][2]int64 {
	var out [][2]int64
	for _, s := range l.Segments() {
		out = append(out, [2]int64{s.BaseOffset, s.NextOffset})
	}
	return out
}

func TestRetention(t *testing.T) {
	// Five sealed segments of two batches and an active one; segment i's
	// max timestamp is 100*(i+1).
	setup := func(t *testing.T) (*Log, []stored, int64) {
		cfg := DefaultConfig()
		b := simpleBatch(t, 1, 100, 0)
		cfg.SegmentBytes = int64(2 * len(b))
		l := openLog(t, t.TempDir(), cfg)
		batches := appendSingles(t, l, 11, 100, func(i int) int64 { return int64(100*(i/2) + 50 + 50*(i%2)) })
		return l, batches, int64(len(b))
	}
	tests := []struct {
		name           string
		retentionMs    int64
		retentionBytes func(batch int64) int64
		now            int64
		wantDeleted    int
	}{
		{"unlimited", -1, nil, 1 << 40, 0},
		{"nothing old enough", 1000, nil, 1000, 0},
		{"time: two segments", 1000, nil, 1250, 2},
		{"time: boundary is strict", 1000, nil, 1200, 1},
		{"time: never the active segment", 0, nil, 1 << 40, 5},
		{"bytes: keep at least 6 batches", -1, func(b int64) int64 { return 6 * b }, 0, 2},
		{"bytes: keep at least 5 batches", -1, func(b int64) int64 { return 5 * b }, 0, 3},
		{"bytes: zero", -1, func(b int64) int64 { return 0 }, 0, 5},
		{"bytes: more than held", -1, func(b int64) int64 { return 100 * b }, 0, 0},
		{"either rule", 1000, func(b int64) int64 { return 9 * b }, 1150, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, batches, size := setup(t)
			cfg := l.Config()
			cfg.RetentionMs = tt.retentionMs
			cfg.RetentionBytes = -1
			if tt.retentionBytes != nil {
				cfg.RetentionBytes = tt.retentionBytes(size)
			}
			l.SetConfig(cfg)
			n, err := l.ApplyRetention(tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantDeleted {
				t.Fatalf("deleted %d segments, want %d", n, tt.wantDeleted)
			}
			if want := int64(2 * n); l.StartOffset() != want {
				t.Fatalf("start offset %d, want %d", l.StartOffset(), want)
			}
			if len(l.Segments()) != 6-n {
				t.Fatalf("%d segments left", len(l.Segments()))
			}
			checkContents(t, l, batches[2*n:])
		})
	}
}

func TestAdvanceStartOffset(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 60, 150, tsIndex)
	segs := l.Segments()
	// A start offset inside a batch inside the third segment.
	var target stored
	for _, b := range batches {
		if b.base > segs[2].BaseOffset && b.next-b.base > 1 {
			target = b
			break
		}
	}
	off := target.base + 1
	if err := l.AdvanceStartOffset(off); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != off {
		t.Fatalf("start %d, want %d", l.StartOffset(), off)
	}
	if got := l.Segments()[0].BaseOffset; got != segs[2].BaseOffset {
		t.Fatalf("first segment %d, want %d", got, segs[2].BaseOffset)
	}
	if _, err := l.Read(off-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if got, err := l.Read(off, 1); err != nil || !bytes.Equal(got, target.bytes) {
		t.Fatalf("read at start: %d bytes, %v", len(got), err)
	}
	// Lowering is a no-op; past the end is an error.
	if err := l.AdvanceStartOffset(off - 5); err != nil || l.StartOffset() != off {
		t.Fatalf("lowering: %v, start %d", err, l.StartOffset())
	}
	if err := l.AdvanceStartOffset(l.EndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past end: %v", err)
	}
	// The start offset survives a crash (no flush) and a reopen.
	crash(t, l)
	l = openLog(t, dir, smallConfig())
	if l.StartOffset() != off {
		t.Fatalf("after reopen start %d, want %d", l.StartOffset(), off)
	}
	checkContents(t, l, batches)
	// Up to the end offset: everything but the active segment goes.
	if err := l.AdvanceStartOffset(l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments left", n)
	}
	checkContents(t, l, batches)
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		// pick chooses the truncation point given the batches and segments.
		pick    func(b []stored, s []SegmentInfo) int64
		wantErr error
	}{
		{"end is a no-op", func(b []stored, _ []SegmentInfo) int64 { return b[len(b)-1].next }, nil},
		{"last batch", func(b []stored, _ []SegmentInfo) int64 { return b[len(b)-1].base }, nil},
		{"inside a sealed segment", func(b []stored, s []SegmentInfo) int64 { return b[3].base }, nil},
		{"segment boundary", func(_ []stored, s []SegmentInfo) int64 { return s[2].BaseOffset }, nil},
		{"everything", func([]stored, []SegmentInfo) int64 { return 0 }, nil},
		{"inside a batch", func(b []stored, _ []SegmentInfo) int64 { return b[5].base + 1 }, ErrNotBatchBoundary},
		{"past the end", func(b []stored, _ []SegmentInfo) int64 { return b[len(b)-1].next + 1 }, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, smallConfig())
			batches := appendBatches(t, l, 60, 150, tsIndex)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			cut := tt.pick(batches, l.Segments())
			err := l.Truncate(cut)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Truncate(%d): %v, want %v", cut, err, tt.wantErr)
			}
			if err != nil {
				checkContents(t, l, batches)
				return
			}
			var keep []stored
			for _, b := range batches {
				if b.base < cut {
					keep = append(keep, b)
				}
			}
			checkContents(t, l, keep)
			// Appends continue from the cut, and the result survives a
			// crash and a reopen.
			more := appendBatches(t, l, 5, 150, tsIndex)
			if more[0].base != cut {
				t.Fatalf("next append at %d, want %d", more[0].base, cut)
			}
			keep = append(keep, more...)
			checkContents(t, l, keep)
			crash(t, l)
			l = openLog(t, dir, smallConfig())
			checkContents(t, l, keep)
		})
	}
}

func TestTruncateBelowStart(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 30, 150, tsIndex)
	mid := batches[20].base + 1
	if err := l.AdvanceStartOffset(mid); err != nil {
		t.Fatal(err)
	}
	cut := batches[10].base
	if err := l.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != cut || l.EndOffset() != cut || len(l.Segments()) != 1 {
		t.Fatalf("start %d end %d segments %d; want an empty log at %d", l.StartOffset(), l.EndOffset(), len(l.Segments()), cut)
	}
	more := appendBatches(t, l, 3, 100, tsIndex)
	crash(t, l)
	l = openLog(t, dir, smallConfig())
	if l.StartOffset() != cut {
		t.Fatalf("start after reopen %d, want %d", l.StartOffset(), cut)
	}
	checkContents(t, l, more)
}

func TestOffsetForTimestamp(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	// Max timestamps go up and down: 1000, 1010, ... with a dip every
	// fifth batch.
	ts := func(i int) int64 {
		if i%5 == 4 {
			return int64(500 + i)
		}
		return tsIndex(i)
	}
	batches := appendBatches(t, l, 60, 150, ts)
	check := func(target int64) {
		t.Helper()
		off, got, ok, err := l.OffsetForTimestamp(target)
		wantOff, wantTs, wantOK := firstAtOrAfter(batches, l.StartOffset(), target)
		if err != nil || ok != wantOK || off != wantOff || got != wantTs {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", target, off, got, ok, err, wantOff, wantTs, wantOK)
		}
	}
	for _, target := range []int64{-5, 0, 504, 999, 1000, 1001, 1010, 1200, 1300, 1590, 1591, 5000} {
		check(target)
	}
	for target := int64(990); target < 1700; target++ {
		check(target)
	}
	checkMaxTimestamp(t, l, batches)
	if err := l.AdvanceStartOffset(batches[20].base + 1); err != nil {
		t.Fatal(err)
	}
	for _, target := range []int64{0, 1000, 1200, 1210, 1300} {
		check(target)
	}
	for target := int64(1190); target < 1230; target++ {
		check(target)
	}
	checkMaxTimestamp(t, l, batches)
}

func TestNotify(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	ch := l.Notify()
	select {
	case <-ch:
		t.Fatal("closed before any append")
	default:
	}
	appendBatches(t, l, 1, 10, tsIndex)
	select {
	case <-ch:
	default:
		t.Fatal("not closed by append")
	}
	ch = l.Notify()
	appendBatches(t, l, 1, 10, tsIndex)
	<-ch
	ch = l.Notify()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-ch
	if _, err := l.Append(simpleBatch(t, 1, 1, 1), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestAppendRejectsMalformed(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	good := simpleBatch(t, 2, 10, 1)
	tests := map[string][]byte{
		"short":           good[:30],
		"length mismatch": good[:len(good)-1],
		"magic 1":         func() []byte { b := bytes.Clone(good); b[offMagic] = 1; return b }(),
		"negative delta":  func() []byte { b := bytes.Clone(good); b[offLastOffsetDelta] = 0xff; return b }(),
	}
	for name, b := range tests {
		if _, err := l.Append(b, 1); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if l.EndOffset() != 0 {
		t.Fatalf("end offset %d", l.EndOffset())
	}
}

func TestFlushRecordsRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 20, 150, tsIndex)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	c, found, err := readCheckpoint(dir)
	if err != nil || !found {
		t.Fatalf("checkpoint: %v found %v", err, found)
	}
	// Every segment's created time is the now of its first append.
	want := checkpoint{StartOffset: 0, RecoveryPoint: l.EndOffset()}
	for _, s := range l.Segments() {
		for _, b := range batches {
			if b.base == s.BaseOffset {
				want.Created = append(want.Created, segmentCreated{Base: s.BaseOffset, Created: b.ts[0]})
			}
		}
	}
	if !c.equal(want) || len(want.Created) < 2 {
		t.Fatalf("checkpoint %+v, want %+v", c, want)
	}
}

func TestDetach(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := openLog(t, dir, smallConfig())
	appendBatches(t, l, 5, 10, tsIndex)
	if err := l.Detach(); err != nil {
		t.Fatal(err)
	}
	// The directory can be moved away; the log is closed for good.
	if err := os.Rename(dir, dir+".1-delete"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Detach: %v", err)
	}
}
