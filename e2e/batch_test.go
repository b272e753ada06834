package e2e

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// testRecord is one record of a hand-built batch.
type testRecord struct {
	Key, Value []byte
}

// batchOpts shapes a hand-built magic v2 record batch, including ways to
// make it wrong.
type batchOpts struct {
	FirstTimestamp int64
	// CountOverride, if non-nil, is written as the record count instead
	// of len(records) (the CRC still covers it, so the batch "checks out").
	CountOverride *int32
	// LastOffsetDeltaOverride, if non-nil, replaces len(records)-1.
	LastOffsetDeltaOverride *int32
	// Magic, if non-zero, replaces 2.
	Magic int8
	// Idempotent, if set, writes this producer id, epoch and base
	// sequence instead of -1s.
	Idempotent *idempotence
}

type idempotence struct {
	ProducerID   int64
	Epoch        int16
	BaseSequence int32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes an uncompressed magic v2 record batch with a correct
// length and CRC-32C, with no producer id (non-idempotent).
func buildBatch(recs []testRecord, o batchOpts) []byte {
	var records []byte
	for i, r := range recs {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, int64(i)) // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = appendVarBytes(body, r.Key)         // key
		body = appendVarBytes(body, r.Value)       // value
		body = binary.AppendVarint(body, 0)        // headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	count := int32(len(recs))
	if o.CountOverride != nil {
		count = *o.CountOverride
	}
	lastDelta := int32(len(recs) - 1)
	if o.LastOffsetDeltaOverride != nil {
		lastDelta = *o.LastOffsetDeltaOverride
	}
	magic := int8(2)
	if o.Magic != 0 {
		magic = o.Magic
	}
	maxTS := o.FirstTimestamp + int64(max(len(recs)-1, 0))

	// The part the CRC covers: attributes to the end.
	var crcPart []byte
	crcPart = binary.BigEndian.AppendUint16(crcPart, 0) // attributes
	crcPart = binary.BigEndian.AppendUint32(crcPart, uint32(lastDelta))
	crcPart = binary.BigEndian.AppendUint64(crcPart, uint64(o.FirstTimestamp))
	crcPart = binary.BigEndian.AppendUint64(crcPart, uint64(maxTS))
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if o.Idempotent != nil {
		pid, epoch, seq = o.Idempotent.ProducerID, o.Idempotent.Epoch, o.Idempotent.BaseSequence
	}
	crcPart = binary.BigEndian.AppendUint64(crcPart, uint64(pid))
	crcPart = binary.BigEndian.AppendUint16(crcPart, uint16(epoch))
	crcPart = binary.BigEndian.AppendUint32(crcPart, uint32(seq))
	crcPart = binary.BigEndian.AppendUint32(crcPart, uint32(count))
	crcPart = append(crcPart, records...)

	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0) // base offset
	// batch length: everything after this field.
	b = binary.BigEndian.AppendUint32(b, uint32(4+1+4+len(crcPart)))
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // partition leader epoch -1
	b = append(b, byte(magic))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(crcPart, castagnoli))
	b = append(b, crcPart...)
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// simpleRecords is n records with keys k0.. and values v0...
func simpleRecords(prefix string, n int) []testRecord {
	out := make([]testRecord, n)
	for i := range out {
		out[i] = testRecord{Key: []byte(prefix + "-k" + strconv.Itoa(i)), Value: []byte(prefix + "-v" + strconv.Itoa(i))}
	}
	return out
}

func int32p(v int32) *int32 { return &v }
