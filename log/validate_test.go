package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawBatch wraps already-encoded (and possibly compressed) records in a
// header with the given count and last offset delta, with a correct CRC.
func rawBatch(records []byte, count, lastOffsetDelta int32, codec int8) []byte {
	return sealBatch(kmsg.RecordBatch{
		Magic:           2,
		Attributes:      int16(codec),
		LastOffsetDelta: lastOffsetDelta,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      count,
		Records:         records,
	})
}

// rawRecord encodes one record body by hand, so tests can break its fields.
func rawRecord(fields ...[]byte) []byte {
	body := bytes.Join(fields, nil)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

func TestValidateBatchValid(t *testing.T) {
	withHeaders := []testRecord{
		{key: nil, value: nil},
		{key: []byte("k"), value: []byte{}, headers: [][2][]byte{{[]byte("h"), nil}, {[]byte{}, []byte("v")}}},
		{key: []byte("key"), value: bytes.Repeat([]byte("x"), 300), tsDelta: -5},
	}
	tests := []struct {
		name  string
		spec  batchSpec
		limit int
	}{
		{"none", batchSpec{records: recs(5, 100)}, 1 << 20},
		{"none one record", batchSpec{records: recs(1, 0)}, 1 << 20},
		{"none headers nulls", batchSpec{records: withHeaders}, 0},
		{"gzip", batchSpec{records: recs(50, 1000), codec: CompressionGzip}, 1 << 20},
		{"snappy raw", batchSpec{records: recs(50, 1000), codec: CompressionSnappy}, 1 << 20},
		{"snappy xerial", batchSpec{records: recs(50, 1000), codec: CompressionSnappy, xerial: true}, 1 << 20},
		{"snappy xerial multi chunk", batchSpec{records: recs(200, 2000), codec: CompressionSnappy, xerial: true}, 1 << 20},
		{"lz4", batchSpec{records: recs(50, 1000), codec: CompressionLZ4}, 1 << 20},
		{"zstd", batchSpec{records: recs(50, 1000), codec: CompressionZstd}, 1 << 20},
		{"zstd headers", batchSpec{records: withHeaders, codec: CompressionZstd}, 1 << 20},
		{"transactional", batchSpec{records: recs(2, 10), attrs: attrTransactional, producerID: 3}, 1 << 20},
		{"exactly at limit", batchSpec{records: recs(1, 10)}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildBatch(t, tt.spec)
			limit := tt.limit
			if limit == -1 {
				limit = len(b)
			}
			h, err := ValidateBatch(b, limit)
			if err != nil {
				t.Fatalf("ValidateBatch: %v", err)
			}
			if int(h.RecordCount) != len(tt.spec.records) || h.Compression() != tt.spec.codec {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

// okRec is a well-formed record with offset delta delta.
func okRec(delta int64) []byte {
	return rawRecord([]byte{0}, vi(0), vi(delta), vi(-1), vi(1), []byte("v"), vi(0))
}

func TestValidateBatchInvalid(t *testing.T) {
	good := func() []byte { return simpleBatch(t, 3, 20, 100) }
	zeros := make([]byte, 8<<20)
	bombRec := rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(int64(len(zeros))), zeros, vi(0))
	bomb := func(codec int8) []byte {
		return rawBatch(compress(t, codec, false, bombRec), 1, 0, codec)
	}
	tests := []struct {
		name  string
		batch []byte
		limit int
		want  error
	}{
		{"too large", good(), 50, ErrBatchTooLarge},
		{"empty", nil, 0, ErrCorruptBatch},
		{"short header", good()[:40], 0, ErrCorruptBatch},
		{"trailing byte", append(good(), 0), 0, ErrCorruptBatch},
		{"truncated", good()[:len(good())-1], 0, ErrCorruptBatch},
		{"length below header", func() []byte {
			b := good()
			binary.BigEndian.PutUint32(b[offLength:], 10)
			return b
		}(), 0, ErrCorruptBatch},
		{"magic 1", func() []byte { b := good(); b[offMagic] = 1; return b }(), 0, ErrUnsupportedMagic},
		{"magic 3", func() []byte { b := good(); b[offMagic] = 3; return b }(), 0, ErrUnsupportedMagic},
		{"bad crc", func() []byte { b := good(); b[len(b)-1] ^= 0xff; return b }(), 0, ErrCorruptBatch},
		{"zero records", rawBatch(nil, 0, -1, 0), 0, ErrCorruptBatch},
		{"count larger than records", rawBatch(append(okRec(0), okRec(1)...), 3, 2, 0), 0, ErrCorruptBatch},
		{"count smaller than records", rawBatch(append(okRec(0), okRec(1)...), 1, 0, 0), 0, ErrCorruptBatch},
		{"last offset delta mismatch", rawBatch(append(okRec(0), okRec(1)...), 2, 5, 0), 0, ErrCorruptBatch},
		{"offset delta out of order", rawBatch(append(okRec(0), okRec(0)...), 2, 1, 0), 0, ErrCorruptBatch},
		{"record length past end", rawBatch(append(vi(1000), okRec(0)[1:]...), 1, 0, 0), 0, ErrCorruptBatch},
		{"record length too small", rawBatch(append(vi(3), 0, 0, 0), 1, 0, 0), 0, ErrCorruptBatch},
		{"negative record length", rawBatch(append(vi(-5), okRec(0)...), 1, 0, 0), 0, ErrCorruptBatch},
		{"key length -2", rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-2), vi(-1), vi(0)), 1, 0, 0), 0, ErrCorruptBatch},
		{"value past record", rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(50), []byte("v"), vi(0)), 1, 0, 0), 0, ErrCorruptBatch},
		{"record longer than fields", rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0), []byte{9}), 1, 0, 0), 0, ErrCorruptBatch},
		{"null header key", rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1)), 1, 0, 0), 0, ErrCorruptBatch},
		{"huge header count", rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1<<30)), 1, 0, 0), 0, ErrCorruptBatch},
		{"varint too long", rawBatch(rawRecord([]byte{0}, vi(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, vi(-1), vi(-1), vi(0)), 1, 0, 0), 0, ErrCorruptBatch},
		{"bytes after records", rawBatch(append(okRec(0), 0), 1, 0, 0), 0, ErrCorruptBatch},
		{"unknown codec", rawBatch(okRec(0), 1, 0, 5), 0, ErrCorruptBatch},
		{"gzip garbage", rawBatch([]byte("not gzip at all"), 1, 0, CompressionGzip), 0, ErrCorruptBatch},
		{"snappy garbage", rawBatch([]byte{0x05, 0xff, 0xff}, 1, 0, CompressionSnappy), 0, ErrCorruptBatch},
		{"snappy claims 4 GiB", rawBatch([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}, 1, 0, CompressionSnappy), 0, ErrBatchTooLarge},
		{"xerial short", rawBatch(xerialMagic, 1, 0, CompressionSnappy), 0, ErrCorruptBatch},
		{"xerial chunk past end", rawBatch(append(compress(t, CompressionSnappy, true, okRec(0)), 0, 0, 1, 0), 1, 0, CompressionSnappy), 0, ErrCorruptBatch},
		{"lz4 garbage", rawBatch([]byte("not lz4"), 1, 0, CompressionLZ4), 0, ErrCorruptBatch},
		{"zstd garbage", rawBatch([]byte("not zstd"), 1, 0, CompressionZstd), 0, ErrCorruptBatch},
		{"gzip trailing record bytes", rawBatch(compress(t, CompressionGzip, false, append(okRec(0), 1, 2)), 1, 0, CompressionGzip), 0, ErrCorruptBatch},
		{"zstd too few records", rawBatch(compress(t, CompressionZstd, false, okRec(0)), 2, 1, CompressionZstd), 0, ErrCorruptBatch},
		{"gzip bomb", bomb(CompressionGzip), 1 << 20, ErrBatchTooLarge},
		{"snappy bomb", bomb(CompressionSnappy), 1 << 20, ErrBatchTooLarge},
		{"xerial bomb", rawBatch(compress(t, CompressionSnappy, true, bombRec), 1, 0, CompressionSnappy), 1 << 20, ErrBatchTooLarge},
		{"lz4 bomb", bomb(CompressionLZ4), 1 << 20, ErrBatchTooLarge},
		{"zstd bomb", bomb(CompressionZstd), 1 << 20, ErrBatchTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateBatch(tt.batch, tt.limit)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrUnsupportedMagic) && !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("unsupported magic should also be corrupt: %v", err)
			}
		})
	}
}

func TestDecompressCap(t *testing.T) {
	tests := []struct {
		maxBytes int
		want     int64
	}{
		{0, maxDecompressCap},
		{-1, maxDecompressCap},
		{1 << 20, 4 << 20},
		{64 << 20, maxDecompressCap},
		{1 << 30, maxDecompressCap},
	}
	for _, tt := range tests {
		if got := decompressCap(tt.maxBytes); got != tt.want {
			t.Errorf("decompressCap(%d) = %d, want %d", tt.maxBytes, got, tt.want)
		}
	}
}

func TestVarint(t *testing.T) {
	tests := []struct {
		in      []byte
		max     int
		want    int64
		wantErr bool
	}{
		{vi(0), 5, 0, false},
		{vi(-1), 5, -1, false},
		{vi(1 << 30), 5, 1 << 30, false},
		{vi(-(1 << 31)), 5, -(1 << 31), false},
		{vi(1 << 31), 5, 0, true},
		{vi(1 << 40), 10, 1 << 40, false},
		{vi(-(1 << 62)), 10, -(1 << 62), false},
		{[]byte{0x80}, 5, 0, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10, 0, true},
	}
	for _, tt := range tests {
		r := recordReader{src: &sliceSource{b: tt.in}, left: math.MaxInt64}
		got, err := r.varint(tt.max)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("varint(%x, %d) = %d, %v; want %d, err %v", tt.in, tt.max, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzValidateBatch(f *testing.F) {
	for _, codec := range []int8{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		b := buildBatch(f, batchSpec{records: recs(3, 30), codec: codec})
		f.Add(b, false)
		f.Add(b[:len(b)-3], true)
		c := bytes.Clone(b)
		c[len(c)/2] ^= 0x55
		f.Add(c, true)
	}
	f.Add(buildBatch(f, batchSpec{records: recs(3, 30), codec: CompressionSnappy, xerial: true}), false)
	f.Add(buildBatch(f, batchSpec{records: timedRecords(5, -3, 9), codec: CompressionZstd, baseTs: 1000}), false)
	f.Add(buildBatch(f, batchSpec{records: recs(3, 30), codec: CompressionLZ4, attrs: attrTimestampType, maxTs: 77}), false)
	f.Add(rawBatch(rawRecord([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), []byte("k"), vi(-1)), 1, 0, 0), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, fix bool) {
		// fix repairs the length field and CRC so the fuzzer reaches the
		// record walk and the decompressors.
		if fix && len(b) >= BatchHeaderSize {
			binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-batchLengthPrefix))
			recrc(b)
		}
		h, err := ValidateBatch(b, 1<<20)
		// The timestamp searches decode records through the same walker,
		// stopping early; they must cope with whatever validation rejects.
		checkBatchSearches(t, b, err == nil)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrBatchTooLarge) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if h.Size() != int64(len(b)) || h.Magic != 2 || h.RecordCount < 1 || h.NextOffset() != h.BaseOffset+int64(h.RecordCount) {
			t.Fatalf("accepted inconsistent batch %+v (len %d)", h, len(b))
		}
		SetBaseOffset(b, h.BaseOffset+1000)
		if _, err := ValidateBatch(b, 1<<20); err != nil {
			t.Fatalf("rebased batch rejected: %v", err)
		}
	})
}

// TestValidateClientBatch: what a client may not write is refused with
// ErrInvalidRecord; the rest is what ValidateBatch says.
func TestValidateClientBatch(t *testing.T) {
	recs := recs(2, 10)
	for _, tc := range []struct {
		name string
		spec batchSpec
		want error
	}{
		{"plain", batchSpec{records: recs, baseSequence: -1}, nil},
		{"idempotent", batchSpec{records: recs, producerID: 5, baseSequence: 0}, nil},
		{"control", batchSpec{records: recs, attrs: attrControl, baseSequence: -1}, ErrInvalidRecord},
		{"transactional control", batchSpec{records: recs, attrs: attrControl | attrTransactional, producerID: 5, baseSequence: 0}, ErrInvalidRecord},
		{"idempotent without a sequence", batchSpec{records: recs, producerID: 5, baseSequence: -1}, ErrInvalidRecord},
		{"idempotent with a negative sequence", batchSpec{records: recs, producerID: 5, baseSequence: -7}, ErrInvalidRecord},
	} {
		_, err := ValidateClientBatch(buildBatch(t, tc.spec), 0)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Counts that do not match the offsets are INVALID_RECORD too (and
	// still corrupt for callers that only know ErrCorruptBatch).
	for _, b := range [][]byte{rawBatch(nil, 0, -1, 0), rawBatch(append(okRec(0), okRec(1)...), 2, 5, 0)} {
		if _, err := ValidateClientBatch(b, 0); !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("count mismatch: %v, want ErrInvalidRecord and ErrCorruptBatch", err)
		}
	}
	corrupt := buildBatch(t, batchSpec{records: recs, baseSequence: -1})
	corrupt[len(corrupt)-1] ^= 1
	if _, err := ValidateClientBatch(corrupt, 0); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("corrupt: %v, want ErrCorruptBatch", err)
	}
}
