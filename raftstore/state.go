package raftstore

import (
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// topicState is a topic and its open partition logs.
type topicState struct {
	meta  topic.Topic
	parts []*partition
}

// partition is one partition's log plus the replicated per-partition state
// that does not live in the segments.
type partition struct {
	topic string
	index int32
	log   *log.Log
	// epochs lists (leader epoch, first offset) in increasing order, like
	// Kafka's leader-epoch-checkpoint; it answers OffsetForLeaderEpoch.
	epochs []EpochStart
	// open maps a producer with a transaction in progress on this
	// partition to the transaction's first offset; the smallest is the
	// last stable offset. aborted lists aborted transactions' ranges for
	// read_committed fetches. Both are guarded by fsm.txnMu.
	open    map[int64]int64
	aborted []AbortedTxn
}

// EpochStart records the first offset written in a leader epoch.
type EpochStart struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// partitionCheckpoint is what a checkpoint stores for one partition: the
// log end offset that the checkpoint's applied index covers.
type partitionCheckpoint struct {
	EndOffset int64           `json:"end_offset"`
	Epochs    []EpochStart    `json:"epochs,omitempty"`
	Open      map[int64]int64 `json:"open,omitempty"`
	Aborted   []AbortedTxn    `json:"aborted,omitempty"`
}

func (p *partition) key() string { return partKey(p.topic, p.index) }

// noteEpoch records that a batch written at offset of p carries epoch. It
// runs on the apply goroutine, the only writer of p.epochs; readers
// (EndOffsetForEpoch) hold f.mu.RLock, so the append holds f.mu.
func (f *fsm) noteEpoch(p *partition, epoch int32, offset int64) {
	if n := len(p.epochs); n > 0 && p.epochs[n-1].Epoch >= epoch {
		return
	}
	f.mu.Lock()
	p.epochs = append(p.epochs, EpochStart{Epoch: epoch, StartOffset: offset})
	f.mu.Unlock()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <= the
// asked one and the offset where the next epoch starts (or the log end).
func (p *partition) endOffsetForEpoch(epoch int32) (int32, int64) {
	leo := p.log.EndOffset()
	found := int32(-1)
	for i, e := range p.epochs {
		if e.Epoch > epoch {
			if found < 0 {
				return -1, -1
			}
			return found, e.StartOffset
		}
		found = p.epochs[i].Epoch
	}
	if found < 0 {
		return -1, -1
	}
	return found, leo
}
