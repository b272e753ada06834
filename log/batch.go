package log

import (
	"encoding/binary"
	"fmt"
)

// BatchHeaderSize is the size of a magic v2 record batch header, up to and
// including the record count.
const BatchHeaderSize = 61

// Byte offsets of the v2 batch header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// batchLengthPrefix is the number of bytes before the first byte counted
	// by the length field (base offset and length themselves).
	batchLengthPrefix = 12
	// minBatchLength is the smallest valid value of the length field: a
	// header with no records.
	minBatchLength = BatchHeaderSize - batchLengthPrefix
)

// Attribute bits of a v2 batch.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codecs as stored in the low three attribute bits.
const (
	CompressionNone   int8 = 0
	CompressionGzip   int8 = 1
	CompressionSnappy int8 = 2
	CompressionLZ4    int8 = 3
	CompressionZstd   int8 = 4
)

// BatchHeader is the decoded fixed-size header of a magic v2 record batch.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // bytes after the length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Compression returns the compression codec (CompressionNone ...).
func (h BatchHeader) Compression() int8 { return int8(h.Attributes & attrCompressionMask) }

// LogAppendTime reports whether the batch's timestamps are broker append times.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// Transactional reports whether the batch is part of a transaction.
func (h BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction markers).
func (h BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// NextOffset is the offset that follows the batch's last record.
func (h BatchHeader) NextOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) + 1 }

// Size is the batch's total size in bytes, header included.
func (h BatchHeader) Size() int64 { return batchLengthPrefix + int64(h.Length) }

// ParseBatchHeader decodes the header at the start of b. It checks only that
// b is long enough; use ValidateBatch to check a batch's contents.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrCorruptBatch, len(b), BatchHeaderSize)
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		Length:          int32(be.Uint32(b[offLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[offRecordCount:])),
	}, nil
}

// SetBaseOffset rewrites the base offset of the batch in b in place. The
// field is outside the CRC. A b shorter than the field is left unchanged.
func SetBaseOffset(b []byte, off int64) {
	if len(b) < offBaseOffset+8 {
		return
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetLeaderEpoch rewrites the partition leader epoch of the batch in b in
// place. The field is outside the CRC. A b shorter than the field is left
// unchanged.
func SetLeaderEpoch(b []byte, e int32) {
	if len(b) < offLeaderEpoch+4 {
		return
	}
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// batchBase, batchSize and friends read single fields from a byte slice that
// is known to hold at least a full header; they serve the read and recovery
// paths, which scan many headers and need only a few fields.
func batchBase(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

func batchSize(b []byte) int64 {
	return batchLengthPrefix + int64(int32(binary.BigEndian.Uint32(b[offLength:])))
}

func batchNext(b []byte) int64 {
	return batchBase(b) + int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))) + 1
}

func batchMaxTimestamp(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
}
