package log

import "errors"

var (
	// ErrCorruptBatch reports a record batch that fails validation: bad
	// framing, bad CRC, records that do not match the header. Kafka error
	// CORRUPT_MESSAGE.
	ErrCorruptBatch = errors.New("corrupt record batch")

	// ErrBatchTooLarge reports a batch longer than the allowed maximum, or
	// one whose records decompress to more than the decompression cap.
	// Kafka error MESSAGE_TOO_LARGE.
	ErrBatchTooLarge = errors.New("record batch too large")

	// ErrInvalidRecord reports a well-formed batch a client may not write:
	// a control batch, or an idempotent batch without a sequence. Kafka
	// error INVALID_RECORD.
	ErrInvalidRecord = errors.New("invalid record batch")

	// ErrUnsupportedMagic reports a batch whose magic byte is not 2. Errors
	// carrying it also match ErrCorruptBatch.
	ErrUnsupportedMagic = errors.New("unsupported record batch magic")

	// ErrOffsetOutOfRange reports an offset below the log start offset or
	// above the log end offset. Kafka error OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("offset out of range")

	// ErrNotBatchBoundary reports a truncation point that is not the base
	// offset of a batch.
	ErrNotBatchBoundary = errors.New("offset is not a batch boundary")

	// ErrClosed reports use of a closed log.
	ErrClosed = errors.New("log closed")

	// ErrDamaged reports bytes of a segment that changed after they were
	// written and flushed: a batch below the recovery point whose CRC or
	// framing fails when it is verified (verify.go). Such a batch is never
	// served; the error names the partition directory, the segment, the
	// position and the offset. Kafka error KAFKA_STORAGE_ERROR.
	ErrDamaged = errors.New("damaged partition data")
)

// ErrSyncFailed marks a failed fsync of a log's files. It is final for the
// log (Sync, Flush): the kernel may have dropped the pages it could not
// write, so the error must not be taken for one that can be retried, even
// when its errno is ENOSPC.
var ErrSyncFailed = errors.New("fsync failed")
