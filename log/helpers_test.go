package log

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testRecord is one record for buildBatch.
type testRecord struct {
	key, value []byte // nil encodes as null
	headers    [][2][]byte
	tsDelta    int64
}

// batchSpec describes a batch for buildBatch.
type batchSpec struct {
	records      []testRecord
	codec        int8
	xerial       bool // snappy: use the xerial framing
	baseOffset   int64
	baseTs       int64
	maxTs        int64 // 0: baseTs + largest tsDelta
	attrs        int16 // extra attribute bits
	producerID   int64
	baseSequence int32
}

// encodeRecords appends the v2 encoding of recs.
func encodeRecords(dst []byte, recs []testRecord) []byte {
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.tsDelta)
		body = binary.AppendVarint(body, int64(i))
		body = appendVarBytes(body, r.key)
		body = appendVarBytes(body, r.value)
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendVarBytes(body, h[0])
			body = appendVarBytes(body, h[1])
		}
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
	}
	return dst
}

func compress(tb testing.TB, codec int8, xerialFraming bool, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	switch codec {
	case CompressionNone:
		return raw
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case CompressionSnappy:
		if xerialFraming {
			return xerial.Encode(nil, raw)
		}
		return snappy.Encode(nil, raw)
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case CompressionZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			tb.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	default:
		tb.Fatalf("codec %d", codec)
	}
	return buf.Bytes()
}

// buildBatch encodes a valid v2 batch. The header is laid out by franz-go's
// kmsg, independently of this package's parser.
func buildBatch(tb testing.TB, s batchSpec) []byte {
	tb.Helper()
	records := compress(tb, s.codec, s.xerial, encodeRecords(nil, s.records))
	return sealBatch(kmsg.RecordBatch{
		FirstOffset:     s.baseOffset,
		Magic:           2,
		Attributes:      s.attrs | int16(s.codec),
		LastOffsetDelta: int32(len(s.records) - 1),
		FirstTimestamp:  s.baseTs,
		MaxTimestamp:    maxTimestamp(s),
		ProducerID:      s.producerIDOrNone(),
		ProducerEpoch:   -1,
		FirstSequence:   s.baseSequence,
		NumRecords:      int32(len(s.records)),
		Records:         records,
	})
}

func (s batchSpec) producerIDOrNone() int64 {
	if s.producerID == 0 {
		return -1
	}
	return s.producerID
}

func maxTimestamp(s batchSpec) int64 {
	if s.maxTs != 0 {
		return s.maxTs
	}
	m := s.baseTs
	for _, r := range s.records {
		m = max(m, s.baseTs+r.tsDelta)
	}
	return m
}

// sealBatch fills in the length and CRC of rb and encodes it.
func sealBatch(rb kmsg.RecordBatch) []byte {
	rb.Length = int32(minBatchLength + len(rb.Records))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// recs returns n records whose values are size bytes.
func recs(n, size int) []testRecord {
	out := make([]testRecord, n)
	for i := range out {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		out[i] = testRecord{key: []byte{byte(i)}, value: v, tsDelta: int64(i)}
	}
	return out
}

// simpleBatch is an uncompressed batch of n records of size bytes with
// base timestamp ts.
func simpleBatch(tb testing.TB, n, size int, ts int64) []byte {
	tb.Helper()
	return buildBatch(tb, batchSpec{records: recs(n, size), baseTs: ts})
}

// recrc recomputes the CRC of a batch edited by a test.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}
