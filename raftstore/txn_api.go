package raftstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// InitTxnProducer returns the producer id and epoch for a transactional id,
// bumping the epoch (and aborting an open transaction) if it exists.
// producerID and epoch are the caller's current ones (KIP-360), or -1.
func (s *Store) InitTxnProducer(ctx context.Context, now int64, txnID string, timeoutMs int32, producerID int64, epoch int16) (InitProducerResult, error) {
	if txnID == "" || len(txnID) > MaxIDBytes {
		return InitProducerResult{}, fmt.Errorf("%w: transactional id of %d bytes (1 to %d)", ErrInvalidCommand, len(txnID), MaxIDBytes)
	}
	r, err := proposeFor[InitProducerResult](ctx, s, cmdInitTxnProducer, initTxnProducerCmd{Now: now, TxnID: txnID, TimeoutMs: timeoutMs, ProducerID: producerID, ProducerEpoch: epoch})
	if err != nil {
		return r, err
	}
	return r, r.Err
}

// AddPartitionsToTxn adds partitions to a producer's transaction; it
// returns one error per partition.
func (s *Store) AddPartitionsToTxn(ctx context.Context, now int64, txnID string, pid int64, epoch int16, parts []TopicPartition) ([]error, error) {
	return proposeFor[[]error](ctx, s, cmdAddPartitionsToTxn, addPartitionsToTxnCmd{Now: now, TxnID: txnID, ProducerID: pid, ProducerEpoch: epoch, Partitions: parts})
}

// AddOffsetsToTxn adds a consumer group to a producer's transaction.
func (s *Store) AddOffsetsToTxn(ctx context.Context, now int64, txnID string, pid int64, epoch int16, group string) error {
	if len(group) > MaxIDBytes {
		return ErrInvalidGroupID
	}
	return s.proposeJSON(ctx, cmdAddOffsetsToTxn, addOffsetsToTxnCmd{Now: now, TxnID: txnID, ProducerID: pid, ProducerEpoch: epoch, Group: group})
}

// TxnOffsetCommit stages offsets that become visible when the transaction
// commits; it returns one error per offset.
func (s *Store) TxnOffsetCommit(ctx context.Context, now int64, txnID string, pid int64, epoch int16, group string, offsets []OffsetCommit) ([]error, error) {
	if len(group) > MaxIDBytes {
		return nil, ErrInvalidGroupID
	}
	return proposeFor[[]error](ctx, s, cmdTxnOffsetCommit, txnOffsetCommitCmd{Now: now, TxnID: txnID, ProducerID: pid, ProducerEpoch: epoch, Group: group, Offsets: offsets})
}

// EndTxn commits or aborts a transaction: markers on every partition and
// the staged offsets, in one raft command.
func (s *Store) EndTxn(ctx context.Context, now int64, txnID string, pid int64, epoch int16, commit bool) error {
	return s.proposeJSON(ctx, cmdEndTxn, endTxnCmd{Now: now, TxnID: txnID, ProducerID: pid, ProducerEpoch: epoch, Commit: commit})
}

// Txn returns a copy of one transactional id's state.
func (s *Store) Txn(id string) (TxnState, bool) {
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	t := s.fsm.txns[id]
	if t == nil {
		return TxnState{}, false
	}
	return *t.clone(), true
}

// HasTxns reports whether any transactional id has state: a transaction
// has run on this cluster.
func (s *Store) HasTxns() bool {
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	return len(s.fsm.txns) > 0
}

// Txns returns every transactional id's state, sorted by id.
func (s *Store) Txns() []TxnState {
	s.fsm.txnMu.RLock()
	out := make([]TxnState, 0, len(s.fsm.txns))
	for _, t := range s.fsm.txns {
		out = append(out, *t.clone())
	}
	s.fsm.txnMu.RUnlock()
	slices.SortFunc(out, func(a, b TxnState) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// LastStableOffset is the offset below which every transaction is decided:
// the first offset of the oldest open transaction, or the high watermark.
func (s *Store) LastStableOffset(topicName string, partition int32) int64 {
	p := s.fsm.partition(topicName, partition)
	if p == nil {
		return -1
	}
	// Read the end first: an open transaction's first offset is always
	// below an end read after it was recorded.
	lso := p.log.EndOffset()
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	for _, first := range p.open {
		lso = min(lso, first)
	}
	return lso
}

// AbortedTxns lists the aborted transactions on a partition that overlap
// [from, to), for read_committed fetches.
func (s *Store) AbortedTxns(topicName string, partition int32, from, to int64) []AbortedTxn {
	p := s.fsm.partition(topicName, partition)
	if p == nil {
		return nil
	}
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	var out []AbortedTxn
	for _, a := range p.aborted {
		if a.LastOffset >= from && a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// ProducerInfo describes an idempotent or transactional producer on one
// partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID     int64
	ProducerEpoch  int16
	LastSequence   int32
	LastTimestamp  int64
	TxnStartOffset int64 // -1 without an open transaction
}

// PartitionProducers lists the producers that have written to a partition.
func (s *Store) PartitionProducers(topicName string, partition int32) ([]ProducerInfo, bool) {
	p := s.fsm.partition(topicName, partition)
	if p == nil {
		return nil, false
	}
	key := p.key()
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	var out []ProducerInfo
	for _, id := range slices.Sorted(maps.Keys(s.fsm.producers)) {
		prod := s.fsm.producers[id]
		win := prod.Parts[key]
		if len(win) == 0 {
			continue
		}
		info := ProducerInfo{ProducerID: id, ProducerEpoch: prod.Epoch, LastSequence: win[len(win)-1].LastSeq, LastTimestamp: prod.LastTimestamp, TxnStartOffset: -1}
		if first, ok := p.open[id]; ok {
			info.TxnStartOffset = first
		}
		out = append(out, info)
	}
	return out, true
}

// abortTimedOut runs on the leader: it aborts transactions open longer than
// their transaction.timeout.ms, bumping the epoch to fence the producer.
func (s *Store) abortTimedOut(ctx context.Context, now time.Time) {
	var due []endTxnCmd
	s.fsm.txnMu.RLock()
	for _, t := range s.fsm.txns {
		if t.State == TxnOngoing && now.UnixMilli()-t.StartTime > int64(t.TimeoutMs) {
			due = append(due, endTxnCmd{Now: now.UnixMilli(), TxnID: t.ID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Timeout: true})
		}
	}
	s.fsm.txnMu.RUnlock()
	for _, c := range due {
		s.logger.Info("aborting timed-out transaction", "transactional_id", c.TxnID, "producer_id", c.ProducerID)
		if err := s.proposeJSON(ctx, cmdEndTxn, c); err != nil {
			s.logger.Warn("abort of timed-out transaction failed", "transactional_id", c.TxnID, "err", err)
		}
	}
}

// PendingTxnOffset reports whether an open transaction holds a staged
// offset for a group's partition (OffsetFetch require_stable answers
// UNSTABLE_OFFSET_COMMIT until it is decided).
func (s *Store) PendingTxnOffset(group, topicName string, partition int32) bool {
	key := partKey(topicName, partition)
	s.fsm.txnMu.RLock()
	defer s.fsm.txnMu.RUnlock()
	for _, t := range s.fsm.txns {
		if t.State != TxnOngoing {
			continue
		}
		if _, ok := t.PendingOffsets[group][key]; ok {
			return true
		}
	}
	return false
}
