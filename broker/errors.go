package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// errorCode maps an error from the layers below to the Kafka error code a
// client expects. nil maps to 0.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range codeTable {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

var codeTable = []struct {
	err  error
	code *kerr.Error
}{
	{raftstore.ErrNotLeader, kerr.NotLeaderForPartition},
	{raftstore.ErrInvalidGroupID, kerr.InvalidGroupID},
	{raftstore.ErrClosed, kerr.NotLeaderForPartition},
	// The outcome is unknown: retriable, and an idempotent retry is safe.
	{raftstore.ErrUnknownOutcome, kerr.RequestTimedOut},
	{raftstore.ErrTopicExists, kerr.TopicAlreadyExists},
	{raftstore.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{raftstore.ErrInvalidPartitions, kerr.InvalidPartitions},
	{raftstore.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{raftstore.ErrInvalidOffset, kerr.OffsetOutOfRange},
	{raftstore.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{raftstore.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{raftstore.ErrUnknownProducerID, kerr.UnknownProducerID},
	{raftstore.ErrInvalidTxnState, kerr.InvalidTxnState},
	{raftstore.ErrInvalidPIDMapping, kerr.InvalidProducerIDMapping},
	{raftstore.ErrStorage, kerr.KafkaStorageError},
	// Damaged data is never served; the node stops (raftstore/damage.go).
	{log.ErrDamaged, kerr.KafkaStorageError},
	{raftstore.ErrInvalidCommand, kerr.InvalidRequest},
	{topic.ErrInvalidName, kerr.InvalidTopicException},
	{topic.ErrInvalidConfig, kerr.InvalidConfig},
	{topic.ErrUnknownConfig, kerr.InvalidConfig},
	{log.ErrBatchTooLarge, kerr.MessageTooLarge},
	{log.ErrInvalidRecord, kerr.InvalidRecord}, // before ErrCorruptBatch: some errors wrap both
	{log.ErrCorruptBatch, kerr.CorruptMessage},
	{log.ErrUnsupportedMagic, kerr.CorruptMessage},
	{log.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
}

// errorMessage is the text for a response's ErrorMessage field.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
