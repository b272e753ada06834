package log

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// recordTimes returns the timestamps a spec's records carry.
func recordTimes(s batchSpec) []int64 {
	out := make([]int64, len(s.records))
	for i, r := range s.records {
		out[i] = s.baseTs + r.tsDelta
		if s.attrs&attrTimestampType != 0 {
			out[i] = maxTimestamp(s)
		}
	}
	return out
}

// randomSpec is a batch of 1-6 records with timestamps around baseTs, one
// in eight of them LogAppendTime.
func randomSpec(rng *rand.Rand, codec codecCase, baseTs int64) batchSpec {
	deltas := make([]int64, 1+rng.IntN(6))
	for i := range deltas {
		deltas[i] = int64(rng.IntN(60)) - 20
	}
	s := batchSpec{records: timedRecords(deltas...), codec: codec.codec, xerial: codec.xerial, baseTs: baseTs}
	if rng.IntN(8) == 0 {
		s.attrs, s.maxTs = attrTimestampType, baseTs+int64(rng.IntN(30))
	}
	return s
}

// TestTimestampSearchRandom compares both searches with brute force over
// logs of random batches, as the start offset moves through them.
func TestTimestampSearchRandom(t *testing.T) {
	for i, codec := range allCodecs {
		t.Run(codec.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			l := openLog(t, t.TempDir(), smallConfig())
			var batches []stored
			baseTs := int64(1000)
			for range 80 {
				spec := randomSpec(rng, codec, baseTs)
				b := buildBatch(t, spec)
				base, err := l.Append(b, 1)
				if err != nil {
					t.Fatal(err)
				}
				h, _ := ParseBatchHeader(b)
				batches = append(batches, stored{base: base, next: h.NextOffset(), maxTs: h.MaxTimestamp, ts: recordTimes(spec)})
				baseTs += int64(rng.IntN(25)) - 5
			}
			if len(l.Segments()) < 3 {
				t.Fatalf("only %d segments", len(l.Segments()))
			}
			// Few searches per start offset: under the race detector, the
			// lz4 reader's 4 MiB block buffers often miss their pool.
			for start := int64(0); start < l.EndOffset(); start += 1 + rng.Int64N(25) {
				if err := l.AdvanceStartOffset(start); err != nil {
					t.Fatal(err)
				}
				for range 12 {
					ts := 950 + rng.Int64N(baseTs+80-950)
					wantOff, wantTs, wantOK := firstAtOrAfter(batches, start, ts)
					off, got, ok, err := l.OffsetForTimestamp(ts)
					if err != nil || ok != wantOK || off != wantOff || got != wantTs {
						t.Fatalf("start %d: OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v",
							start, ts, off, got, ok, err, wantOff, wantTs, wantOK)
					}
				}
				checkMaxTimestamp(t, l, batches)
			}
		})
	}
}

// FuzzRecordTimestamps checks the batch-level searches against brute force
// on batches built from the input: one record per delta byte, any codec,
// CreateTime or LogAppendTime, with the start offset anywhere in the batch.
func FuzzRecordTimestamps(f *testing.F) {
	for codec := range len(allCodecs) {
		f.Add([]byte{0, 5, 3, 20, 10}, uint8(codec), false, uint8(2), int8(4))
		f.Add([]byte{0x80, 0x7f, 0, 0x7f}, uint8(codec), false, uint8(0), int8(127))
		f.Add([]byte{1, 2, 3}, uint8(codec), true, uint8(1), int8(-3))
	}
	f.Fuzz(func(t *testing.T, deltas []byte, codecIdx uint8, lat bool, startDelta uint8, target int8) {
		if len(deltas) == 0 || len(deltas) > 64 {
			return
		}
		codec := allCodecs[int(codecIdx)%len(allCodecs)]
		d := make([]int64, len(deltas))
		for i, b := range deltas {
			d[i] = int64(int8(b))
		}
		spec := batchSpec{records: timedRecords(d...), codec: codec.codec, xerial: codec.xerial, baseOffset: 100, baseTs: 1000}
		if lat {
			spec.attrs, spec.maxTs = attrTimestampType, 1000+int64(target)
		}
		b := buildBatch(t, spec)
		h, err := ValidateBatch(b, 0)
		if err != nil {
			t.Fatalf("ValidateBatch: %v", err)
		}
		want := []stored{{base: 100, next: h.NextOffset(), maxTs: h.MaxTimestamp, ts: recordTimes(spec)}}
		start := 100 + int64(startDelta)%int64(len(deltas)+1)
		ts := 1000 + int64(target)

		wantOff, wantTs, wantOK := firstAtOrAfter(want, start, ts)
		m, err := recordAtOrAfter(h, b[BatchHeaderSize:], start, ts)
		if err != nil || m.found != wantOK || m.offset != wantOff || m.timestamp != wantTs {
			t.Fatalf("recordAtOrAfter(start %d, ts %d) = %+v, %v; want %d, %d, %v", start, ts, m, err, wantOff, wantTs, wantOK)
		}
		wantOff, wantTs, wantOK = maxAtOrAfter(want, start)
		m, err = maxRecordIn(h, b[BatchHeaderSize:], start)
		if err != nil || m.found != wantOK || m.offset != wantOff || m.timestamp != wantTs {
			t.Fatalf("maxRecordIn(start %d) = %+v, %v; want %d, %d, %v", start, m, err, wantOff, wantTs, wantOK)
		}
	})
}

// checkBatchSearches runs the batch-level searches over arbitrary bytes
// (FuzzValidateBatch's input): they must not panic, and on a batch that
// validated they must succeed and agree with each other.
func checkBatchSearches(t *testing.T, b []byte, valid bool) {
	if len(b) < BatchHeaderSize {
		return
	}
	b = bytes.Clone(b)
	SetBaseOffset(b, 1000) // as Append would; offsets near MaxInt64 would wrap
	h, _ := ParseBatchHeader(b)
	records := b[BatchHeaderSize:]
	for _, start := range []int64{h.BaseOffset, h.BaseOffset + 1} {
		first, err := recordAtOrAfter(h, records, start, math.MinInt64)
		if err != nil {
			if valid {
				t.Fatalf("recordAtOrAfter on a valid batch: %v", err)
			}
			continue
		}
		if inBatch := start < h.NextOffset(); first.found != inBatch || (inBatch && first.offset != start) {
			t.Fatalf("first record from %d: %+v (batch %d..%d)", start, first, h.BaseOffset, h.NextOffset())
		}
		for _, ts := range []int64{h.BaseTimestamp, h.MaxTimestamp, 0} {
			m, err := recordAtOrAfter(h, records, start, ts)
			if err == nil && m.found && (m.timestamp < ts || m.offset < start || m.offset >= h.NextOffset()) {
				t.Fatalf("recordAtOrAfter(%d, %d) = %+v", start, ts, m)
			}
		}
		top, err := maxRecordIn(h, records, start)
		if err != nil {
			if valid {
				t.Fatalf("maxRecordIn on a valid batch: %v", err)
			}
			continue
		}
		// The max record is the first record reaching its own timestamp.
		again, err := recordAtOrAfter(h, records, start, max(top.timestamp, 0))
		if err != nil || again.found != top.found || again.offset != top.offset || again.timestamp != top.timestamp {
			t.Fatalf("maxRecordIn(%d) = %+v, but recordAtOrAfter its timestamp = %+v, %v", start, top, again, err)
		}
	}
}
