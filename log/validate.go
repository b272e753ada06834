package log

import (
	"errors"
	"fmt"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ValidateClientBatch is ValidateBatch plus what Kafka refuses from a
// client's Produce only: control batches (transaction markers are the
// coordinator's to write; a stray one makes consumers loop or deliver it
// as a record) and batches with a producer id but a negative base
// sequence. Those errors wrap ErrInvalidRecord (INVALID_RECORD).
func ValidateClientBatch(b []byte, maxBytes int) (BatchHeader, error) {
	h, err := ValidateBatch(b, maxBytes)
	switch {
	case err != nil:
		return h, err
	case h.Control():
		return h, fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return h, fmt.Errorf("%w: base sequence %d with producer id %d", ErrInvalidRecord, h.BaseSequence, h.ProducerID)
	}
	return h, nil
}

// ValidateBatch checks that b is exactly one well-formed magic v2 record
// batch of at most maxBytes bytes (maxBytes <= 0: no limit), the check a
// broker makes once on produce. It verifies the length field, the magic
// byte, the CRC, that the record count is positive and matches
// lastOffsetDelta, and walks every record: each length must fit in the
// bytes that remain, offset deltas must run 0..count-1, and nothing may
// follow the last record. Compressed records are decompressed as a stream
// with a cap of 4*maxBytes (at most 256 MiB) decompressed bytes.
//
// Errors wrap ErrBatchTooLarge (MESSAGE_TOO_LARGE), or ErrCorruptBatch
// (CORRUPT_MESSAGE); a magic other than 2 also wraps ErrUnsupportedMagic.
func ValidateBatch(b []byte, maxBytes int) (BatchHeader, error) {
	if maxBytes > 0 && len(b) > maxBytes {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(b), maxBytes)
	}
	h, err := ParseBatchHeader(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if h.Length < minBatchLength || h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: length field %d does not match %d bytes", ErrCorruptBatch, h.Length, len(b))
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: %w: magic %d", ErrCorruptBatch, ErrUnsupportedMagic, h.Magic)
	}
	if got := crc32.Checksum(b[offAttributes:], castagnoli); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, header says %08x", ErrCorruptBatch, got, h.CRC)
	}
	// A count that does not match the offsets is INVALID_RECORD in Kafka
	// (its LogValidator), not CORRUPT_MESSAGE, which clients retry: these
	// errors match both.
	if h.RecordCount <= 0 {
		return h, fmt.Errorf("%w: %w: record count %d", ErrCorruptBatch, ErrInvalidRecord, h.RecordCount)
	}
	if h.LastOffsetDelta != h.RecordCount-1 {
		return h, fmt.Errorf("%w: %w: last offset delta %d with %d records", ErrCorruptBatch, ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	}
	err = walkBatchRecords(h.Compression(), b[BatchHeaderSize:], h.RecordCount, decompressCap(maxBytes), nil)
	if err != nil {
		if errors.Is(err, ErrBatchTooLarge) {
			return h, err
		}
		return h, fmt.Errorf("%w: %w", ErrCorruptBatch, err)
	}
	return h, nil
}
