package log

import (
	"bytes"
	"testing"
)

// readRange reads r into buf, which holds r.Len bytes.
func readRange(r *FileRange, buf []byte) error {
	_, err := r.File.ReadAt(buf[:r.Len], r.Off)
	return err
}

// wantRange is what ReadRange must find: whole batches from the one
// holding offset, in its segment, below end, at most maxBytes except the
// first; and whether it stopped at the segment's end with room and
// batches below end left in later segments.
func wantRange(batches []stored, segs []SegmentInfo, offset int64, maxBytes int, end int64) ([]byte, bool) {
	if offset >= end {
		return nil, false
	}
	var seg SegmentInfo
	for _, s := range segs {
		if s.BaseOffset <= offset {
			seg = s
		}
	}
	var out []byte
	last := int64(-1)
	for _, b := range batches {
		if b.next <= offset || b.base < seg.BaseOffset || b.base >= seg.NextOffset || b.base >= end {
			continue
		}
		if len(out) > 0 && len(out)+len(b.bytes) > maxBytes {
			return out, false
		}
		out = append(out, b.bytes...)
		last = b.next
	}
	// Every batch of the segment below end was taken.
	return out, last == seg.NextOffset && len(out) < maxBytes && seg.NextOffset < end
}

func TestReadRange(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	batches := appendCounted(t, l, 120, 40, tsIndex, func(i int) int { return 1 + i%5 })
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	logEnd := l.EndOffset()
	for _, b := range batches {
		for _, offset := range []int64{b.base, b.next - 1} {
			for _, maxBytes := range []int{1, 100, 300, 1000, 5000} {
				for _, end := range []int64{offset, offset + 1, offset + 7, logEnd - 3, logEnd, logEnd + 10} {
					minFile := []int{0, 200, 1 << 20}[(offset+end)%3]
					got, r, more, err := l.ReadRange(offset, int32(maxBytes), end, minFile, nil)
					if err != nil {
						t.Fatalf("ReadRange(%d, %d, %d): %v", offset, maxBytes, end, err)
					}
					want, wantMore := wantRange(batches, segs, offset, maxBytes, min(end, logEnd))
					if more != wantMore {
						t.Fatalf("ReadRange(%d, %d, %d): more %v, want %v", offset, maxBytes, end, more, wantMore)
					}
					if r != nil && got != nil || r != nil && r.Len < minFile || got != nil && len(got) >= minFile {
						t.Fatalf("ReadRange(%d, %d, %d, %d): %d bytes and %v", offset, maxBytes, end, minFile, len(got), r)
					}
					if r != nil {
						got = make([]byte, r.Len)
						if err := readRange(r, got); err != nil {
							t.Fatal(err)
						}
						r.Close()
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("ReadRange(%d, %d, %d): got %d bytes, want %d", offset, maxBytes, end, len(got), len(want))
					}
				}
			}
		}
	}
	if _, _, _, err := l.ReadRange(logEnd+1, 100, logEnd+5, 0, nil); err == nil {
		t.Fatal("ReadRange past the end: no error")
	}
	if b, r, _, err := l.ReadRange(logEnd, 100, logEnd+5, 0, nil); b != nil || r != nil || err != nil {
		t.Fatalf("ReadRange at the end: %v, %v, %v", b, r, err)
	}
}

// A range stays readable after its segment is deleted.
func TestReadRangeOutlivesSegment(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	batches := appendBatches(t, l, 60, 40, tsIndex)
	_, r, _, err := l.ReadRange(0, 1<<20, l.EndOffset(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := l.AdvanceStartOffset(batches[len(batches)-1].base); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, r.Len)
	if err := readRange(r, got); err != nil {
		t.Fatal(err)
	}
	if want, _ := wantRange(batches, []SegmentInfo{{BaseOffset: 0, NextOffset: segsNext(batches, r.Len)}}, 0, 1<<20, 1<<40); !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
}

// segsNext is the next offset after the batches that fill n bytes.
func segsNext(batches []stored, n int) int64 {
	for _, b := range batches {
		if n -= len(b.bytes); n <= 0 {
			return b.next
		}
	}
	return -1
}
