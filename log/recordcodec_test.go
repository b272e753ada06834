package log

import (
	"bytes"
	"fmt"
	"testing"
)

func TestDecodeBatchCodecs(t *testing.T) {
	recs := []testRecord{
		{key: []byte("k1"), value: []byte("v1"), tsDelta: 0},
		{key: nil, value: []byte("v2"), headers: [][2][]byte{{[]byte("h"), []byte("x")}, {[]byte("n"), nil}}, tsDelta: 5},
		{key: []byte("k3"), value: nil, tsDelta: 9},
	}
	cases := []struct {
		codec  int8
		xerial bool
	}{{CompressionNone, false}, {CompressionGzip, false}, {CompressionSnappy, false}, {CompressionSnappy, true}, {CompressionLZ4, false}, {CompressionZstd, false}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("codec%d-xerial%v", c.codec, c.xerial), func(t *testing.T) {
			b := buildBatch(t, batchSpec{records: recs, codec: c.codec, xerial: c.xerial, baseOffset: 100, baseTs: 1000, producerID: -1, baseSequence: -1})
			h, got, err := DecodeBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset != 100 || len(got) != len(recs) {
				t.Fatalf("base %d, %d records", h.BaseOffset, len(got))
			}
			for i, r := range got {
				want := recs[i]
				if r.Offset != 100+int64(i) || r.Timestamp != 1000+want.tsDelta || !bytes.Equal(r.Key, want.key) || (r.Key == nil) != (want.key == nil) ||
					!bytes.Equal(r.Value, want.value) || (r.Value == nil) != (want.value == nil) || len(r.Headers) != len(want.headers) {
					t.Fatalf("record %d: %+v, want %+v", i, r, want)
				}
				for j, hd := range r.Headers {
					if hd.Key != string(want.headers[j][0]) || !bytes.Equal(hd.Value, want.headers[j][1]) || (hd.Value == nil) != (want.headers[j][1] == nil) {
						t.Fatalf("record %d header %d: %+v", i, j, hd)
					}
				}
			}
		})
	}
}

func TestEncodeBatchRoundTrip(t *testing.T) {
	in := []Record{
		{Timestamp: 2000, Key: []byte("a"), Value: []byte(`{"count":1}`)},
		{Timestamp: 1990, Key: nil, Value: []byte("x"), Headers: []RecordHeader{{Key: "error", Value: []byte("boom")}}},
	}
	b := EncodeBatch(in)
	h, err := ValidateBatch(b, 0)
	if err != nil {
		t.Fatalf("the encoded batch does not validate: %v", err)
	}
	if h.ProducerID != -1 || h.RecordCount != 2 || h.MaxTimestamp != 2000 || h.BaseTimestamp != 1990 {
		t.Fatalf("header %+v", h)
	}
	_, out, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if out[i].Timestamp != in[i].Timestamp || !bytes.Equal(out[i].Key, in[i].Key) || (out[i].Key == nil) != (in[i].Key == nil) ||
			!bytes.Equal(out[i].Value, in[i].Value) || len(out[i].Headers) != len(in[i].Headers) {
			t.Fatalf("record %d: %+v, want %+v", i, out[i], in[i])
		}
	}
	if EncodeBatch(nil) != nil {
		t.Fatal("an empty batch was encoded")
	}
}

// FuzzDecodeBatch: no input makes DecodeBatch panic or allocate without
// bound.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(EncodeBatch([]Record{{Timestamp: 1, Key: []byte("k"), Value: []byte("v")}}))
	f.Add(buildBatch(f, batchSpec{records: []testRecord{{value: []byte("z")}}, codec: CompressionZstd, producerID: -1, baseSequence: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, recs, err := DecodeBatch(b)
		if err == nil && len(recs) > len(b) {
			t.Fatalf("%d records from %d bytes", len(recs), len(b))
		}
	})
}
