package log

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Record is one record of a batch as a reader sees it: its absolute offset
// and timestamp, and its key, value and headers (nil when null). They alias
// the buffer they were decoded from.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []RecordHeader
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string
	Value []byte
}

// DecodeBatch decodes every record of the one batch b holds (as Read
// returns them, already validated when they were appended). A control
// batch yields its header and no records. Compressed records are
// decompressed into a new buffer of at most maxDecompressCap bytes.
func DecodeBatch(b []byte) (BatchHeader, []Record, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Size() > int64(len(b)) || h.Size() < BatchHeaderSize {
		return h, nil, fmt.Errorf("%w: batch of %d bytes in %d", ErrCorruptBatch, h.Size(), len(b))
	}
	if h.Control() {
		return h, nil, nil
	}
	data := b[BatchHeaderSize:h.Size()]
	codec := h.Compression()
	switch {
	case codec == CompressionNone:
	case codec == CompressionSnappy && !isXerial(data):
		out, err := decodeSnappyBlock(nil, data, maxDecompressCap)
		if err != nil {
			return h, nil, fmt.Errorf("decompress batch at %d: %w", h.BaseOffset, err)
		}
		data = out
	default:
		var out []byte
		err := withStream(codec, data, maxDecompressCap, func(r *bufio.Reader) error {
			var err error
			out, err = io.ReadAll(r)
			return err
		})
		if err != nil {
			return h, nil, fmt.Errorf("decompress batch at %d: %w", h.BaseOffset, err)
		}
		data = out
	}
	if h.RecordCount < 0 {
		return h, nil, fmt.Errorf("%w: record count %d", ErrCorruptBatch, h.RecordCount)
	}
	// The count is the header's word; the bytes bound what it can hold.
	recs := make([]Record, 0, min(int(h.RecordCount), len(data)/minRecordBody+1))
	d := recordDecoder{b: data}
	for i := int32(0); i < h.RecordCount; i++ {
		r, err := d.record(h)
		if err != nil {
			return h, nil, fmt.Errorf("batch at %d, record %d: %w", h.BaseOffset, i, err)
		}
		recs = append(recs, r)
	}
	return h, recs, nil
}

type recordDecoder struct {
	b []byte
	i int
}

var errShortRecord = errors.New("record runs past its batch")

func (d *recordDecoder) varint() (int64, error) {
	v, n := binary.Varint(d.b[d.i:])
	if n <= 0 {
		return 0, errShortRecord
	}
	d.i += n
	return v, nil
}

// bytes reads a varint-length-prefixed byte string; -1 is null.
func (d *recordDecoder) bytes() ([]byte, error) {
	n, err := d.varint()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if n < 0 || n > int64(len(d.b)-d.i) {
		return nil, errShortRecord
	}
	v := d.b[d.i : d.i+int(n) : d.i+int(n)]
	d.i += int(n)
	return v, nil
}

func (d *recordDecoder) record(h BatchHeader) (Record, error) {
	if _, err := d.varint(); err != nil { // length
		return Record{}, err
	}
	if d.i >= len(d.b) {
		return Record{}, errShortRecord
	}
	d.i++ // attributes
	tsDelta, err := d.varint()
	if err != nil {
		return Record{}, err
	}
	offDelta, err := d.varint()
	if err != nil {
		return Record{}, err
	}
	r := Record{Offset: h.BaseOffset + offDelta, Timestamp: h.BaseTimestamp + tsDelta}
	if h.LogAppendTime() {
		r.Timestamp = h.MaxTimestamp
	}
	if r.Key, err = d.bytes(); err != nil {
		return Record{}, err
	}
	if r.Value, err = d.bytes(); err != nil {
		return Record{}, err
	}
	n, err := d.varint()
	if err != nil {
		return Record{}, err
	}
	if n < 0 || n > int64(len(d.b)-d.i) {
		return Record{}, errShortRecord
	}
	for j := int64(0); j < n; j++ {
		k, err := d.bytes()
		if err != nil {
			return Record{}, err
		}
		v, err := d.bytes()
		if err != nil {
			return Record{}, err
		}
		r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: v})
	}
	return r, nil
}

// EncodeBatch builds an uncompressed magic v2 batch of recs, with no
// producer id, for the broker's own writes (processor output). Offsets
// are assigned from 0 (the append rewrites the base offset); timestamps
// are the records'. The length and the CRC-32C are filled in.
func EncodeBatch(recs []Record) []byte {
	if len(recs) == 0 {
		return nil
	}
	base, maxTS := recs[0].Timestamp, recs[0].Timestamp
	for _, r := range recs {
		base, maxTS = min(base, r.Timestamp), max(maxTS, r.Timestamp)
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs)*64)
	var rec []byte
	for i, r := range recs {
		rec = rec[:0]
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, r.Timestamp-base)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.Key)
		rec = appendVarBytes(rec, r.Value)
		rec = binary.AppendVarint(rec, int64(len(r.Headers)))
		for _, hd := range r.Headers {
			rec = appendVarBytes(rec, []byte(hd.Key))
			rec = appendVarBytes(rec, hd.Value)
		}
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], 0)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	binary.BigEndian.PutUint64(b[offProducerID:], ^uint64(0))    // -1
	binary.BigEndian.PutUint16(b[offProducerEpoch:], ^uint16(0)) // -1
	binary.BigEndian.PutUint32(b[offBaseSequence:], ^uint32(0))  // -1
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(recs)))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
