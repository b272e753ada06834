package log

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// codecCase is a compression codec as a test names it.
type codecCase struct {
	name   string
	codec  int8
	xerial bool
}

var allCodecs = []codecCase{
	{"none", CompressionNone, false},
	{"gzip", CompressionGzip, false},
	{"snappy", CompressionSnappy, false},
	{"snappy-xerial", CompressionSnappy, true},
	{"lz4", CompressionLZ4, false},
	{"zstd", CompressionZstd, false},
}

// layouts are the segment configurations the timestamp tests run under:
// one segment with sparse indexes, and a segment (and index entries) per
// batch.
var layouts = []struct {
	name string
	cfg  func() Config
}{
	{"one-segment", func() Config { c := DefaultConfig(); c.RetentionMs = -1; return c }},
	{"segment-per-batch", func() Config {
		c := DefaultConfig()
		c.SegmentBytes, c.IndexIntervalBytes, c.RetentionMs = 1, 0, -1
		return c
	}},
}

// timedRecords returns records with the given timestamp deltas.
func timedRecords(deltas ...int64) []testRecord {
	out := make([]testRecord, len(deltas))
	for i, d := range deltas {
		out[i] = testRecord{key: fmt.Appendf(nil, "k%d", i), value: make([]byte, 100+i), tsDelta: d}
	}
	return out
}

// timestampFixture is the log TestTimestampSearch searches. Its record
// timestamps, by offset:
//
//	batch 0 (0-4):   1000 1005 1003 1020 1010
//	batch 1 (5-8):   1002 1040 1012 1040
//	batch 2 (9-11):  1050 1050 1050 (LogAppendTime; the deltas say 900 907 903)
//	batch 3 (12-15): 1025 1020 1065 1062
//	batch 4 (16-17): 1061 1060
func timestampFixture(codec codecCase) []batchSpec {
	spec := func(baseTs int64, recs []testRecord) batchSpec {
		return batchSpec{records: recs, codec: codec.codec, xerial: codec.xerial, baseTs: baseTs}
	}
	lat := spec(900, timedRecords(0, 7, 3))
	lat.attrs, lat.maxTs = attrTimestampType, 1050
	return []batchSpec{
		spec(1000, timedRecords(0, 5, 3, 20, 10)),
		spec(1010, timedRecords(-8, 30, 2, 30)),
		lat,
		spec(1020, timedRecords(5, 0, 45, 42)),
		spec(1060, timedRecords(1, 0)),
	}
}

func TestTimestampSearch(t *testing.T) {
	type lookup struct {
		ts, off, got int64
		ok           bool
	}
	none := func(ts int64) lookup { return lookup{ts: ts} }
	tests := []struct {
		start   int64
		lookups []lookup
		max     lookup // ts unused
	}{
		{0, []lookup{
			{math.MinInt64, 0, 1000, true}, {0, 0, 1000, true}, {1000, 0, 1000, true},
			{1001, 1, 1005, true}, {1004, 1, 1005, true}, {1005, 1, 1005, true}, // between records
			{1006, 3, 1020, true}, {1020, 3, 1020, true}, // skips a smaller record
			{1021, 6, 1040, true}, {1024, 6, 1040, true}, {1040, 6, 1040, true}, // first of two
			{1041, 9, 1050, true}, {1050, 9, 1050, true}, // LogAppendTime
			{1051, 14, 1065, true}, {1063, 14, 1065, true}, {1065, 14, 1065, true},
			none(1066), none(math.MaxInt64),
		}, lookup{off: 14, got: 1065, ok: true}},
		{2, []lookup{{0, 2, 1003, true}, {1001, 2, 1003, true}, {1004, 3, 1020, true}}, lookup{off: 14, got: 1065, ok: true}},
		{4, []lookup{{0, 4, 1010, true}, {1011, 6, 1040, true}, {1015, 6, 1040, true}}, lookup{off: 14, got: 1065, ok: true}},
		{7, []lookup{{0, 7, 1012, true}, {1030, 8, 1040, true}, {1041, 9, 1050, true}}, lookup{off: 14, got: 1065, ok: true}},
		{10, []lookup{{0, 10, 1050, true}, {1041, 10, 1050, true}, {1051, 14, 1065, true}}, lookup{off: 14, got: 1065, ok: true}},
		{13, []lookup{{0, 13, 1020, true}, {1021, 14, 1065, true}}, lookup{off: 14, got: 1065, ok: true}},
		// The start offset cuts off the record with the largest timestamp.
		{15, []lookup{{0, 15, 1062, true}, {1061, 15, 1062, true}, {1062, 15, 1062, true}, none(1063)}, lookup{off: 15, got: 1062, ok: true}},
		{16, []lookup{{0, 16, 1061, true}, {1061, 16, 1061, true}, none(1062)}, lookup{off: 16, got: 1061, ok: true}},
		{17, []lookup{{0, 17, 1060, true}, none(1061)}, lookup{off: 17, got: 1060, ok: true}},
		{18, []lookup{none(0), none(1000)}, lookup{}},
	}
	for _, layout := range layouts {
		for _, codec := range allCodecs {
			t.Run(layout.name+"/"+codec.name, func(t *testing.T) {
				l := openLog(t, t.TempDir(), layout.cfg())
				for i, spec := range timestampFixture(codec) {
					if _, err := l.Append(buildBatch(t, spec), 1); err != nil {
						t.Fatalf("Append %d: %v", i, err)
					}
				}
				for _, tt := range tests {
					if err := l.AdvanceStartOffset(tt.start); err != nil {
						t.Fatal(err)
					}
					for _, lk := range tt.lookups {
						off, got, ok, err := l.OffsetForTimestamp(lk.ts)
						if err != nil || ok != lk.ok || (ok && (off != lk.off || got != lk.got)) {
							t.Errorf("start %d: OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v",
								tt.start, lk.ts, off, got, ok, err, lk.off, lk.got, lk.ok)
						}
					}
					off, got, ok, err := l.MaxTimestampOffset()
					if err != nil || ok != tt.max.ok || (ok && (off != tt.max.off || got != tt.max.got)) {
						t.Errorf("start %d: MaxTimestampOffset() = %d, %d, %v, %v; want %d, %d, %v",
							tt.start, off, got, ok, err, tt.max.off, tt.max.got, tt.max.ok)
					}
				}
			})
		}
	}
}

func TestMaxTimestampOffsetTies(t *testing.T) {
	// Timestamps by offset: 5 9 | 9 1 | 9, so the first 9 is at 1.
	specs := []batchSpec{
		{records: timedRecords(0, 4), baseTs: 5},
		{records: timedRecords(0, -8), baseTs: 9},
		{records: timedRecords(0), baseTs: 9},
	}
	want := map[int64][2]int64{0: {1, 9}, 1: {1, 9}, 2: {2, 9}, 3: {4, 9}, 4: {4, 9}}
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			l := openLog(t, t.TempDir(), layout.cfg())
			for _, spec := range specs {
				if _, err := l.Append(buildBatch(t, spec), 1); err != nil {
					t.Fatal(err)
				}
			}
			for start := int64(0); start <= 4; start++ {
				if err := l.AdvanceStartOffset(start); err != nil {
					t.Fatal(err)
				}
				off, ts, ok, err := l.MaxTimestampOffset()
				if err != nil || !ok || off != want[start][0] || ts != want[start][1] {
					t.Errorf("start %d: MaxTimestampOffset() = %d, %d, %v, %v; want %v", start, off, ts, ok, err, want[start])
				}
			}
		})
	}
}

func TestTimestampSearchEmptyAndClosed(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	if _, _, ok, err := l.OffsetForTimestamp(0); ok || err != nil {
		t.Fatalf("empty log: OffsetForTimestamp ok %v, err %v", ok, err)
	}
	if _, _, ok, err := l.MaxTimestampOffset(); ok || err != nil {
		t.Fatalf("empty log: MaxTimestampOffset ok %v, err %v", ok, err)
	}
	// No timestamps at all (-1): there is no max timestamp record.
	if _, err := l.Append(buildBatch(t, batchSpec{records: timedRecords(0, 0), baseTs: -1, maxTs: -1}), 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := l.MaxTimestampOffset(); ok || err != nil {
		t.Fatalf("no timestamps: MaxTimestampOffset ok %v, err %v", ok, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.OffsetForTimestamp(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: OffsetForTimestamp err %v", err)
	}
	if _, _, _, err := l.MaxTimestampOffset(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: MaxTimestampOffset err %v", err)
	}
}

// An append racing a search raises its segment's max timestamp, and may
// add a time index entry, before it publishes the batch: the searches must
// still answer from the published batches.
func TestTimestampSearchAheadOfEnd(t *testing.T) {
	l := openLog(t, t.TempDir(), smallConfig())
	batches := appendBatches(t, l, 40, 150, tsIndex)
	seg := l.segs[len(l.segs)-1]
	if _, err := seg.tindex.maybeAdd(1<<40, seg.rel(l.EndOffset())); err != nil {
		t.Fatal(err)
	}
	seg.maxTs.Store(1 << 40)
	checkTimestamps(t, l, batches)
	if _, _, ok, err := l.OffsetForTimestamp(1 << 40); ok || err != nil {
		t.Fatalf("OffsetForTimestamp(1<<40) ok %v, err %v", ok, err)
	}
}

func TestTimestampSearchCorruptRecords(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig())
	appendBatches(t, l, 1, 50, tsIndex)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The first record's length becomes -1. The batch lies below the
	// recovery point, so Open does not check its CRC.
	patchFile(t, segmentPath(dir, 0, logSuffix), BatchHeaderSize, []byte{0x01})
	l = openLog(t, dir, smallConfig())
	if _, _, _, err := l.OffsetForTimestamp(0); !errors.Is(err, errCorruptSegment) {
		t.Fatalf("OffsetForTimestamp: err %v, want errCorruptSegment", err)
	}
	if _, _, _, err := l.MaxTimestampOffset(); !errors.Is(err, errCorruptSegment) {
		t.Fatalf("MaxTimestampOffset: err %v, want errCorruptSegment", err)
	}
}
