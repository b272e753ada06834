package raftstore

import (
	"fmt"
	"math"
)

// producerWindow is how many recent batches per producer and partition are
// remembered for duplicate detection, as in Kafka.
const producerWindow = 5

// batchMeta is one remembered batch of an idempotent producer.
type batchMeta struct {
	FirstSeq   int32 `json:"first_seq"`
	LastSeq    int32 `json:"last_seq"`
	BaseOffset int64 `json:"base_offset"`
}

// producerState is an idempotent producer as the FSM knows it.
type producerState struct {
	ID    int64                  `json:"id"`
	Epoch int16                  `json:"epoch"`
	Parts map[string][]batchMeta `json:"parts,omitempty"`
	// TxnID is the transactional id that owns this producer, if any.
	TxnID string `json:"txn_id,omitempty"`
	// LastTimestamp is the leader clock of the producer's last write, for
	// DescribeProducers.
	LastTimestamp int64 `json:"last_timestamp,omitempty"`
}

// seqCheck is the verdict on an incoming batch.
type seqCheck int

const (
	seqAppend seqCheck = iota
	seqDuplicate
	// seqNewEpoch appends and moves the producer to the batch's epoch,
	// forgetting the old epoch's sequences.
	seqNewEpoch
)

// check decides whether a batch with the given epoch and sequences may be
// appended to partition key, is a retry of a remembered batch (dupOffset is
// its original base offset), or is an error.
func (p *producerState) check(key string, epoch int16, first, last int32) (seqCheck, int64, error) {
	if epoch < p.Epoch {
		return 0, 0, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, p.ID, epoch, p.Epoch)
	}
	if epoch > p.Epoch {
		// An idempotent producer may bump its own epoch after an error and
		// restart its sequences at 0 (franz-go does, as Kafka allows). A
		// transactional producer's epoch only moves through InitProducerId.
		if p.TxnID != "" || first != 0 {
			return 0, 0, fmt.Errorf("%w: producer %d epoch %d is newer than %d", ErrInvalidProducerEpoch, p.ID, epoch, p.Epoch)
		}
		return seqNewEpoch, 0, nil
	}
	win := p.Parts[key]
	for _, b := range win {
		if b.FirstSeq == first && b.LastSeq == last {
			return seqDuplicate, b.BaseOffset, nil
		}
	}
	if len(win) == 0 {
		if first != 0 {
			return 0, 0, fmt.Errorf("%w: producer %d first batch on %s starts at sequence %d", ErrOutOfOrderSequence, p.ID, key, first)
		}
		return seqAppend, 0, nil
	}
	if want := nextSeq(win[len(win)-1].LastSeq); first != want {
		return 0, 0, fmt.Errorf("%w: producer %d on %s sent sequence %d, expected %d", ErrOutOfOrderSequence, p.ID, key, first, want)
	}
	return seqAppend, 0, nil
}

// record remembers an appended batch.
func (p *producerState) record(key string, first, last int32, base int64) {
	if p.Parts == nil {
		p.Parts = make(map[string][]batchMeta)
	}
	win := append(p.Parts[key], batchMeta{FirstSeq: first, LastSeq: last, BaseOffset: base})
	if len(win) > producerWindow {
		win = append(win[:0:0], win[len(win)-producerWindow:]...)
	}
	p.Parts[key] = win
}

// nextSeq is the sequence after s; sequences wrap at MaxInt32 to 0.
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// lastSeq is the sequence of the last record of a batch.
func lastSeq(first, lastOffsetDelta int32) int32 {
	v := int64(first) + int64(lastOffsetDelta)
	if v > math.MaxInt32 {
		v -= math.MaxInt32 + 1
	}
	return int32(v)
}
