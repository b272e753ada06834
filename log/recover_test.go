package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashedLog writes 2n batches over several segments, flushing after the
// first n, and crashes. It returns the directory, the batches, the
// segments and the recovery point.
func crashedLog(tb testing.TB, n int) (string, []stored, []SegmentInfo, int64) {
	tb.Helper()
	dir := tb.TempDir()
	l := openLog(tb, dir, smallConfig())
	batches := appendBatches(tb, l, n, 150, tsIndex)
	if err := l.Flush(); err != nil {
		tb.Fatal(err)
	}
	rp := l.EndOffset()
	batches = append(batches, appendBatches(tb, l, n, 150, func(i int) int64 { return tsIndex(n + i) })...)
	segs := l.Segments()
	crash(tb, l)
	return dir, batches, segs, rp
}

// position returns where a batch starts in its segment file.
func position(batches []stored, segs []SegmentInfo, b stored) (SegmentInfo, int64) {
	var seg SegmentInfo
	for _, s := range segs {
		if s.BaseOffset <= b.base {
			seg = s
		}
	}
	var pos int64
	for _, o := range batches {
		if o.base >= seg.BaseOffset && o.base < b.base {
			pos += int64(len(o.bytes))
		}
	}
	return seg, pos
}

func before(batches []stored, off int64) []stored {
	var out []stored
	for _, b := range batches {
		if b.base < off {
			out = append(out, b)
		}
	}
	return out
}

func patchFile(tb testing.TB, path string, at int64, data []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, at); err != nil {
		tb.Fatal(err)
	}
}

func appendFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	patchFile(tb, path, st.Size(), data)
}

func TestRecovery(t *testing.T) {
	type damage func(t *testing.T, dir string, batches []stored, segs []SegmentInfo, rp int64) (survivors []stored)
	last := func(batches []stored) stored { return batches[len(batches)-1] }
	tests := []struct {
		name   string
		damage damage
	}{
		{"clean crash", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			return b
		}},
		{"truncated inside the last batch", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			seg, pos := position(b, s, last(b))
			os.Truncate(seg.Path, pos+int64(len(last(b).bytes))/2)
			return b[:len(b)-1]
		}},
		{"torn header", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			seg, pos := position(b, s, last(b))
			os.Truncate(seg.Path, pos+10)
			return b[:len(b)-1]
		}},
		{"flipped bytes in the last batch", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			seg, pos := position(b, s, last(b))
			patchFile(t, seg.Path, pos+BatchHeaderSize+5, []byte{0xde, 0xad})
			return b[:len(b)-1]
		}},
		{"bad length field", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			seg, pos := position(b, s, last(b))
			patchFile(t, seg.Path, pos+offLength, []byte{0x7f, 0, 0, 0})
			return b[:len(b)-1]
		}},
		{"bad base offset", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			seg, pos := position(b, s, last(b))
			patchFile(t, seg.Path, pos, []byte{0, 0, 0, 0, 0, 0, 0, 1})
			return b[:len(b)-1]
		}},
		{"garbage after the last batch", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			appendFile(t, s[len(s)-1].Path, bytes.Repeat([]byte{0x5a}, 100))
			return b
		}},
		{"zeros after the last batch", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			appendFile(t, s[len(s)-1].Path, make([]byte, 5000))
			return b
		}},
		{"corrupt batch in an unflushed sealed segment", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			victim := s[len(s)-2].BaseOffset + 1
			var v stored
			for _, x := range b {
				if x.next > victim {
					v = x
					break
				}
			}
			seg, pos := position(b, s, v)
			patchFile(t, seg.Path, pos+int64(len(v.bytes))-1, []byte{0xff ^ v.bytes[len(v.bytes)-1]})
			return before(b, v.base)
		}},
		{"missing index", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.Remove(segmentPath(dir, s[0].BaseOffset, indexSuffix))
			os.Remove(segmentPath(dir, s[len(s)-1].BaseOffset, indexSuffix))
			return b
		}},
		{"missing time index", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.Remove(segmentPath(dir, s[1].BaseOffset, timeIndexSuffix))
			return b
		}},
		{"partial index entry", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			appendFile(t, segmentPath(dir, s[0].BaseOffset, indexSuffix), []byte{1, 2, 3})
			appendFile(t, segmentPath(dir, s[1].BaseOffset, timeIndexSuffix), []byte{1, 2, 3})
			return b
		}},
		{"index entry pointing at the wrong batch", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			path := segmentPath(dir, s[0].BaseOffset, indexSuffix)
			st, _ := os.Stat(path)
			patchFile(t, path, st.Size()-4, binary.BigEndian.AppendUint32(nil, 7))
			return b
		}},
		{"index full of garbage", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			path := segmentPath(dir, s[1].BaseOffset, indexSuffix)
			garbage := make([]byte, 64)
			for i := range garbage {
				garbage[i] = byte(i * 37)
			}
			os.WriteFile(path, garbage, 0o644)
			return b
		}},
		{"index middle entry garbage", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			// Passes the open-time check (first and last entries are fine);
			// reads must notice and fall back to scanning.
			path := segmentPath(dir, s[0].BaseOffset, indexSuffix)
			st, _ := os.Stat(path)
			if st.Size() < 3*offsetEntrySize {
				t.Skip("index too small")
			}
			patchFile(t, path, offsetEntrySize+4, binary.BigEndian.AppendUint32(nil, 1))
			return b
		}},
		{"time index last entry lies", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			path := segmentPath(dir, s[0].BaseOffset, timeIndexSuffix)
			st, _ := os.Stat(path)
			patchFile(t, path, st.Size()-timeEntrySize, binary.BigEndian.AppendUint64(nil, 1<<50))
			return b
		}},
		{"time index emptied", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.Truncate(segmentPath(dir, s[0].BaseOffset, timeIndexSuffix), 0)
			return b
		}},
		{"offset index emptied", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.Truncate(segmentPath(dir, s[0].BaseOffset, indexSuffix), 0)
			return b
		}},
		{"corrupt checkpoint", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.WriteFile(filepath.Join(dir, checkpointName), []byte("nonsense"), 0o644)
			return b
		}},
		{"missing checkpoint", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.Remove(filepath.Join(dir, checkpointName))
			return b
		}},
		{"leftovers", func(t *testing.T, dir string, b []stored, s []SegmentInfo, rp int64) []stored {
			os.WriteFile(filepath.Join(dir, checkpointName+tmpSuffix), []byte("x"), 0o644)
			os.WriteFile(segmentPath(dir, 99999, indexSuffix), []byte("x"), 0o644)
			os.WriteFile(filepath.Join(dir, "unrelated.txt"), []byte("x"), 0o644)
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, batches, segs, rp := crashedLog(t, 30)
			want := tt.damage(t, dir, batches, segs, rp)
			l := openLog(t, dir, smallConfig())
			checkContents(t, l, want)
			checkTimestamps(t, l, want)
			checkSegmentTimestamps(t, l, want)
			// The log takes appends again, and a clean reopen agrees.
			more := appendBatches(t, l, 3, 150, tsIndex)
			want = append(want, more...)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, smallConfig())
			checkContents(t, l, want)
			checkTimestamps(t, l, want)
			if _, err := os.Stat(segmentPath(dir, 99999, indexSuffix)); err == nil {
				t.Fatal("orphan index survived")
			}
			if _, err := os.Stat(filepath.Join(dir, checkpointName+tmpSuffix)); err == nil {
				t.Fatal("temporary file survived")
			}
		})
	}
}

// checkSegmentTimestamps checks each segment's max timestamp, which
// time-based retention relies on, against the batches.
func checkSegmentTimestamps(tb testing.TB, l *Log, want []stored) {
	tb.Helper()
	for _, s := range l.Segments() {
		m := int64(-1)
		for _, b := range want {
			if b.base >= s.BaseOffset && b.base < s.NextOffset {
				m = max(m, b.maxTs)
			}
		}
		if s.MaxTimestamp != m {
			tb.Fatalf("segment %d: max timestamp %d, want %d", s.BaseOffset, s.MaxTimestamp, m)
		}
	}
}

// checkTimestamps compares OffsetForTimestamp and MaxTimestampOffset with
// a scan of want.
func checkTimestamps(tb testing.TB, l *Log, want []stored) {
	tb.Helper()
	start := l.StartOffset()
	for ts := int64(990); ts < tsIndex(len(want)+5); ts += 13 {
		wantOff, wantTs, wantOK := firstAtOrAfter(want, start, ts)
		off, got, ok, err := l.OffsetForTimestamp(ts)
		if err != nil || ok != wantOK || off != wantOff || got != wantTs {
			tb.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", ts, off, got, ok, err, wantOff, wantTs, wantOK)
		}
	}
	checkMaxTimestamp(tb, l, want)
}

func TestCleanReopenTrustsFlushedSegments(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	batches := appendBatches(t, l, 60, 150, tsIndex)
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage the records of a batch in a flushed, sealed segment: a clean
	// reopen must not scan it (that is the point of the recovery point),
	// so the segment keeps its full length.
	seg, pos := position(batches, segs, batches[2])
	patchFile(t, seg.Path, pos+BatchHeaderSize+1, []byte{0xee})
	l = openLog(t, dir, smallConfig())
	if got := l.Segments(); len(got) != len(segs) || got[0].Size != segs[0].Size || l.EndOffset() != batches[len(batches)-1].next {
		t.Fatalf("reopen scanned flushed data: %+v", got)
	}
}

func TestParseCheckpoint(t *testing.T) {
	good := checkpoint{StartOffset: 5, RecoveryPoint: 10, Created: []segmentCreated{{0, 7}, {8, 1234}}}
	const v1 = "brokerd-log-checkpoint 1\nstart-offset 5\nrecovery-point 10\n"
	const v2 = "brokerd-log-checkpoint 2\nstart-offset 5\nrecovery-point 10\n"
	plain := checkpoint{StartOffset: 5, RecoveryPoint: 10}
	tests := []struct {
		name string
		in   string
		want checkpoint
		ok   bool
	}{
		{"round trip", string(good.encode()), good, true},
		{"no segments", string(plain.encode()), plain, true},
		{"v2 literal", v2 + "segment-created 0 7\nsegment-created 8 1234\n", good, true},
		{"v1 active segment", v1 + "active-segment 8 1234\n", checkpoint{StartOffset: 5, RecoveryPoint: 10, Created: []segmentCreated{{8, 1234}}}, true},
		{"v1 no active", v1 + "active-segment -1 -1\n", plain, true},
		{"v1 unknown created", v1 + "active-segment 8 -1\n", plain, true},
		{"v1 missing active", v1, checkpoint{}, false},
		{"v1 two active", v1 + "active-segment 8 1\nactive-segment 9 1\n", checkpoint{}, false},
		{"v1 below -1", v1 + "active-segment -2 1\n", checkpoint{}, false},
		{"v1 line in v2", v2 + "active-segment 8 1234\n", checkpoint{}, false},
		{"v2 line in v1", v1 + "segment-created 8 1234\n", checkpoint{}, false},
		{"empty", "", checkpoint{}, false},
		{"header only", "brokerd-log-checkpoint 2\n", checkpoint{}, false},
		{"no recovery point", "brokerd-log-checkpoint 2\nstart-offset 1\n", checkpoint{}, false},
		{"wrong header", "brokerd-log-checkpoint 3\nstart-offset 1\nrecovery-point 1\n", checkpoint{}, false},
		{"missing newline", "brokerd-log-checkpoint 2\nstart-offset 1\nrecovery-point 1", checkpoint{}, false},
		{"missing newline after segment", v2 + "segment-created 0 7", checkpoint{}, false},
		{"blank line", v2 + "\n", checkpoint{}, false},
		{"extra field", "brokerd-log-checkpoint 2\nstart-offset 1 2\nrecovery-point 1\n", checkpoint{}, false},
		{"double space", v2 + "segment-created 0  7\n", checkpoint{}, false},
		{"missing value", v2 + "segment-created 0\n", checkpoint{}, false},
		{"field order", "brokerd-log-checkpoint 2\nrecovery-point 1\nstart-offset 1\n", checkpoint{}, false},
		{"negative", "brokerd-log-checkpoint 2\nstart-offset -1\nrecovery-point 1\n", checkpoint{}, false},
		{"negative base", v2 + "segment-created -1 7\n", checkpoint{}, false},
		{"negative created", v2 + "segment-created 0 -1\n", checkpoint{}, false},
		{"duplicate base", v2 + "segment-created 8 7\nsegment-created 8 9\n", checkpoint{}, false},
		{"unsorted bases", v2 + "segment-created 8 7\nsegment-created 0 9\n", checkpoint{}, false},
		{"not a number", "brokerd-log-checkpoint 2\nstart-offset x\nrecovery-point 1\n", checkpoint{}, false},
		{"overflow", v2 + "segment-created 0 9223372036854775808\n", checkpoint{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCheckpoint([]byte(tt.in))
			if (err == nil) != tt.ok || !got.equal(tt.want) {
				t.Fatalf("parseCheckpoint = %+v, %v; want %+v ok=%v", got, err, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add(checkpoint{StartOffset: 5, RecoveryPoint: 10, Created: []segmentCreated{{0, 7}, {8, 1234}}}.encode())
	f.Add(checkpoint{StartOffset: 5, RecoveryPoint: 10}.encode())
	f.Add([]byte("brokerd-log-checkpoint 1\nstart-offset 5\nrecovery-point 10\nactive-segment 8 1234\n"))
	f.Add([]byte("brokerd-log-checkpoint 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCheckpoint(b)
		if err != nil {
			return
		}
		// Every entry takes a line of at least 20 bytes.
		if len(c.Created)*20 > len(b) {
			t.Fatalf("%d entries from %d bytes", len(c.Created), len(b))
		}
		again, err := parseCheckpoint(c.encode())
		if err != nil || !again.equal(c) {
			t.Fatalf("re-encoding %+v: %+v, %v", c, again, err)
		}
	})
}

func TestParseSegmentName(t *testing.T) {
	tests := []struct {
		name   string
		base   int64
		suffix string
		ok     bool
	}{
		{"00000000000000000000.log", 0, logSuffix, true},
		{"00000000000000000042.index", 42, indexSuffix, true},
		{"09223372036854775807.timeindex", 1<<63 - 1, timeIndexSuffix, true},
		{"99999999999999999999.log", 0, "", false},
		{"0000000000000000004.log", 0, "", false},
		{"0000000000000000000x.log", 0, "", false},
		{"00000000000000000000.log.deleted", 0, "", false},
		{"log.checkpoint", 0, "", false},
	}
	for _, tt := range tests {
		base, suffix, ok := parseSegmentName(tt.name)
		if base != tt.base || suffix != tt.suffix || ok != tt.ok {
			t.Errorf("parseSegmentName(%q) = %d, %q, %v", tt.name, base, suffix, ok)
		}
	}
}

// TestFlushedDamageRefused: a flushed segment that no longer reads back
// (cut short here, as a failing disk can leave it) is below the recovery
// point: Open refuses it with ErrDamaged, naming the segment, rather than
// truncating there, which deleted every later segment (flushed data on
// this replica only).
func TestFlushedDamageRefused(t *testing.T) {
	dir, batches, segs, _ := crashedLog(t, 30)
	var inFirst []stored
	for _, x := range batches {
		if x.base < segs[0].NextOffset {
			inFirst = append(inFirst, x)
		}
	}
	v := inFirst[len(inFirst)-1]
	_, pos := position(batches, segs, v)
	if err := os.Truncate(segs[0].Path, pos+5); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, smallConfig(), quiet)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), filepath.Base(segs[0].Path)) {
		t.Fatalf("Open of a flushed segment cut short: %v, want ErrDamaged naming it", err)
	}
	for _, s := range segs[1:] {
		if _, err := os.Stat(s.Path); err != nil {
			t.Fatalf("a later segment was deleted: %v", err)
		}
	}
}
