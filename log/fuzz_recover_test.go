package log

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Damage modes for FuzzRecover.
const (
	damageOverwriteTail = iota // overwrite bytes past the recovery point
	damageTruncateTail         // cut the last segment past the recovery point
	damageAppend               // append bytes to the last segment
	damageIndex                // replace a flushed segment's offset index
	damageTimeIndex            // replace a flushed segment's time index
	damageCheckpoint           // replace the checkpoint
	damageModes
)

// copyDir copies the regular files of src into a new directory.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}

// maskEpoch clears the leader epochs of a run of batches: the field is
// outside the CRC, so damage to it cannot be detected and is not checked.
func maskEpoch(b []byte) []byte {
	b = bytes.Clone(b)
	for p := 0; p+BatchHeaderSize <= len(b); {
		copy(b[p+offLeaderEpoch:p+offLeaderEpoch+4], []byte{0, 0, 0, 0})
		size := int(batchSize(b[p:]))
		if size < BatchHeaderSize {
			break
		}
		p += size
	}
	return b
}

func FuzzRecover(f *testing.F) {
	template, batches, segs, rp := crashedLog(f, 16)
	if len(segs) < 3 || segs[0].NextOffset > rp {
		f.Fatalf("fixture needs a flushed sealed segment and more: %d segments, recovery point %d", len(segs), rp)
	}
	last := segs[len(segs)-1]
	var rpPos int64 // where the unflushed bytes of the last segment start
	for _, b := range batches {
		if b.base >= last.BaseOffset && b.base < rp {
			rpPos += int64(len(b.bytes))
		}
	}
	for mode := range damageModes {
		f.Add([]byte{0xff, 0x00, 0x13}, uint32(0), uint8(mode))
		f.Add(make([]byte, 16), uint32(1000), uint8(mode))
	}
	f.Add(bytes.Repeat([]byte{0x7f}, 40), uint32(7), uint8(damageOverwriteTail))
	f.Add(batches[0].bytes, uint32(0), uint8(damageAppend))
	f.Add(checkpoint{StartOffset: 3, RecoveryPoint: 1 << 40, Created: []segmentCreated{{0, 5}, {segs[1].BaseOffset, 7}}}.encode(), uint32(0), uint8(damageCheckpoint))

	f.Fuzz(func(t *testing.T, data []byte, at uint32, mode uint8) {
		if len(data) > 1<<12 {
			return
		}
		dir := copyDir(t, template)
		span := last.Size - rpPos
		tailPos := rpPos + int64(at)%max(span, 1)
		intact := true // damage the log cannot detect must not happen
		switch mode % damageModes {
		case damageOverwriteTail:
			patchFile(t, last.pathIn(dir), tailPos, data)
			intact = false
		case damageTruncateTail:
			if err := os.Truncate(last.pathIn(dir), tailPos); err != nil {
				t.Fatal(err)
			}
			intact = false
		case damageAppend:
			appendFile(t, last.pathIn(dir), data)
		case damageIndex:
			os.WriteFile(segmentPath(dir, segs[0].BaseOffset, indexSuffix), data, 0o644)
		case damageTimeIndex:
			os.WriteFile(segmentPath(dir, segs[0].BaseOffset, timeIndexSuffix), data, 0o644)
		case damageCheckpoint:
			os.WriteFile(filepath.Join(dir, checkpointName), data, 0o644)
		}

		l, err := Open(dir, smallConfig(), quiet)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.close(false) // no fsync: the fuzzer runs many of these
		start, end := l.StartOffset(), l.EndOffset()
		want := before(batches, end)
		if len(want) > 0 && want[len(want)-1].next != end && start <= want[len(want)-1].next {
			t.Fatalf("end offset %d is not a batch boundary", end)
		}
		if intact && end < batches[len(batches)-1].next && start <= batches[len(batches)-1].next {
			t.Fatalf("lost data: end %d, want %d", end, batches[len(batches)-1].next)
		}
		if start < end {
			got, err := l.Read(start, 1<<30)
			if err != nil {
				t.Fatalf("Read(%d): %v", start, err)
			}
			if !bytes.Equal(maskEpoch(got), maskEpoch(concat(want, start))) {
				t.Fatalf("surviving batches differ: got %d bytes, want %d", len(got), len(concat(want, start)))
			}
			for _, b := range want {
				if b.next <= start {
					continue
				}
				got, err := l.Read(max(b.base, start), 1)
				if err != nil || !bytes.Equal(maskEpoch(got), maskEpoch(b.bytes)) {
					t.Fatalf("Read(%d, 1): %d bytes, %v", b.base, len(got), err)
				}
			}
		}
		for _, ts := range []int64{0, tsIndex(10), tsIndex(10) + 1, tsIndex(20), tsIndex(40)} {
			off, got, ok, err := l.OffsetForTimestamp(ts)
			wantOff, wantTs, wantOK := firstAtOrAfter(want, start, ts)
			if err != nil || ok != wantOK || off != wantOff || got != wantTs {
				t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", ts, off, got, ok, err, wantOff, wantTs, wantOK)
			}
		}
		checkMaxTimestamp(t, l, want)
		// The log still takes appends at its end.
		b := simpleBatch(t, 2, 10, 5)
		if base, err := l.Append(b, 5); err != nil || base != end {
			t.Fatalf("Append after recovery: %d, %v; want %d", base, err, end)
		}
	})
}

// pathIn returns the segment's file in dir (tests copy logs around).
func (s SegmentInfo) pathIn(dir string) string { return filepath.Join(dir, filepath.Base(s.Path)) }
