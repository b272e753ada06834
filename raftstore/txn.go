package raftstore

import (
	"fmt"
	"slices"
	"strings"
)

// Transaction states, with Kafka's names.
const (
	TxnEmpty          = "Empty"
	TxnOngoing        = "Ongoing"
	TxnCompleteCommit = "CompleteCommit"
	TxnCompleteAbort  = "CompleteAbort"
)

// TxnState is a transactional id's coordinator state. It lives in the FSM:
// a transaction's markers, offsets and state change in one raft command,
// so there is no prepare phase to recover.
type TxnState struct {
	ID            string           `json:"id"`
	ProducerID    int64            `json:"producer_id"`
	ProducerEpoch int16            `json:"producer_epoch"`
	State         string           `json:"state"`
	TimeoutMs     int32            `json:"timeout_ms"`
	StartTime     int64            `json:"start_time"` // leader clock when it became Ongoing
	LastUpdate    int64            `json:"last_update"`
	Partitions    []TopicPartition `json:"partitions,omitempty"` // sorted
	Groups        []string         `json:"groups,omitempty"`     // sorted
	// PendingOffsets are TxnOffsetCommits waiting for the commit, per
	// group and partition key.
	PendingOffsets map[string]map[string]OffsetCommit `json:"pending_offsets,omitempty"`
}

func (t *TxnState) clone() *TxnState {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	c.Groups = slices.Clone(t.Groups)
	c.PendingOffsets = nil
	for g, m := range t.PendingOffsets {
		if c.PendingOffsets == nil {
			c.PendingOffsets = map[string]map[string]OffsetCommit{}
		}
		cm := make(map[string]OffsetCommit, len(m))
		for k, v := range m {
			cm[k] = v
		}
		c.PendingOffsets[g] = cm
	}
	return &c
}

// AbortedTxn is one aborted transaction's range on a partition, what Fetch
// returns to read_committed consumers so they can drop its records.
type AbortedTxn struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"` // the abort marker's offset
}

func cmpTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// addTP inserts p into the sorted set s.
func addTP(s []TopicPartition, p TopicPartition) []TopicPartition {
	i, found := slices.BinarySearchFunc(s, p, cmpTP)
	if found {
		return s
	}
	return slices.Insert(s, i, p)
}

func hasTP(s []TopicPartition, p TopicPartition) bool {
	_, found := slices.BinarySearchFunc(s, p, cmpTP)
	return found
}

// Transaction commands.

type initTxnProducerCmd struct {
	Now           int64  `json:"now"`
	TxnID         string `json:"txn_id"`
	TimeoutMs     int32  `json:"timeout_ms"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
}

type addPartitionsToTxnCmd struct {
	Now           int64            `json:"now"`
	TxnID         string           `json:"txn_id"`
	ProducerID    int64            `json:"producer_id"`
	ProducerEpoch int16            `json:"producer_epoch"`
	Partitions    []TopicPartition `json:"partitions"`
}

type addOffsetsToTxnCmd struct {
	Now           int64  `json:"now"`
	TxnID         string `json:"txn_id"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	Group         string `json:"group"`
}

type txnOffsetCommitCmd struct {
	Now           int64          `json:"now"`
	TxnID         string         `json:"txn_id"`
	ProducerID    int64          `json:"producer_id"`
	ProducerEpoch int16          `json:"producer_epoch"`
	Group         string         `json:"group"`
	Offsets       []OffsetCommit `json:"offsets"`
}

type endTxnCmd struct {
	Now           int64  `json:"now"`
	TxnID         string `json:"txn_id"`
	ProducerID    int64  `json:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch"`
	Commit        bool   `json:"commit"`
	// Timeout marks an abort the coordinator decided (transaction.timeout.ms):
	// it bumps the epoch so the zombie producer is fenced.
	Timeout bool `json:"timeout,omitempty"`
}

// checkTxnEpoch fences requests from an older producer epoch.
func checkTxnEpoch(t *TxnState, pid int64, epoch int16) error {
	if t == nil {
		return fmt.Errorf("%w: unknown transactional id", ErrInvalidPIDMapping)
	}
	if pid != t.ProducerID {
		return fmt.Errorf("%w: transactional id %s has producer %d, request has %d", ErrInvalidPIDMapping, t.ID, t.ProducerID, pid)
	}
	if epoch < t.ProducerEpoch {
		return fmt.Errorf("%w: transactional id %s is at epoch %d, request has %d", ErrProducerFenced, t.ID, t.ProducerEpoch, epoch)
	}
	if epoch > t.ProducerEpoch {
		return fmt.Errorf("%w: transactional id %s is at epoch %d, request has %d", ErrInvalidProducerEpoch, t.ID, t.ProducerEpoch, epoch)
	}
	return nil
}
