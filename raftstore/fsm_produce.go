package raftstore

import (
	"errors"
	"fmt"

	"github.com/brokerd/brokerd/log"
)

// ProduceResult is the outcome for one batch of a produce command.
type ProduceResult struct {
	BaseOffset     int64
	LogStartOffset int64
	// Duplicate is true when the batch was a retry answered with the
	// original offset, not appended again.
	Duplicate bool
	Err       error
}

func (f *fsm) applyProduce(c *produceCmd, term int32) []ProduceResult {
	out := make([]ProduceResult, len(c.Batches))
	for i := range c.Batches {
		if f.stopped {
			out[i] = ProduceResult{Err: errStopped}
			continue
		}
		out[i] = f.produceOne(c, &c.Batches[i], term)
	}
	return out
}

func (f *fsm) produceOne(c *produceCmd, b *ProduceBatch, term int32) ProduceResult {
	now := c.Now
	p := f.partition(b.Topic, b.Partition)
	if p == nil {
		return ProduceResult{Err: fmt.Errorf("%w: %s-%d", ErrUnknownTopic, b.Topic, b.Partition)}
	}
	h, err := log.ParseBatchHeader(b.Data)
	if err != nil {
		return ProduceResult{Err: fmt.Errorf("%w: %v", ErrInvalidCommand, err)}
	}
	if h.Transactional() && h.ProducerID < 0 {
		return ProduceResult{Err: fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidTxnState)}
	}
	var prod *producerState
	first, last := h.BaseSequence, int32(0)
	key := p.key()
	if h.ProducerID >= 0 {
		prod = f.producers[h.ProducerID]
		if prod == nil {
			return ProduceResult{Err: fmt.Errorf("%w: %d", ErrUnknownProducerID, h.ProducerID)}
		}
		// A transactional batch's producer must be the one the request's
		// transactional id owns (replicated state: every replica decides
		// alike), before anything else is looked at, a retry included: a
		// client cannot write into another's transaction by naming its
		// producer id. Kafka's transaction verification answers
		// INVALID_PRODUCER_ID_MAPPING.
		if h.Transactional() && !c.Legacy && prod.TxnID != c.TxnID {
			return ProduceResult{Err: fmt.Errorf("%w: producer %d does not belong to transactional id %q", ErrInvalidPIDMapping, prod.ID, c.TxnID)}
		}
		last = lastSeq(first, h.LastOffsetDelta)
		verdict, dup, err := prod.check(key, h.ProducerEpoch, first, last)
		if err != nil {
			return ProduceResult{Err: err}
		}
		if verdict == seqDuplicate {
			return ProduceResult{BaseOffset: dup, LogStartOffset: p.log.StartOffset(), Duplicate: true}
		}
		if h.Transactional() {
			if err := f.checkTxnProduce(prod, TopicPartition{b.Topic, b.Partition}); err != nil {
				return ProduceResult{Err: err}
			}
		}
	}
	// The batch is rewritten in place (leader epoch here, base offset in
	// Append): both fields sit outside the CRC. This is safe because raft
	// has already persisted the entry, and replication reads entries back
	// from the log store, never from this slice. Wrapping the log store in
	// raft's LogCache would break that and needs a copy here.
	data := b.Data
	log.SetLeaderEpoch(data, term)
	// A transaction's first batch on a partition is recorded open before
	// Append publishes it: a read_committed fetch that reads the new end
	// offset must also find the transaction open, or its last stable
	// offset would pass records that may yet abort. The FSM is the only
	// writer, so the end offset now is the batch's base offset.
	openedHere := prod != nil && h.Transactional() && f.noteTxnWrite(p, prod.ID, p.log.EndOffset())
	var base int64
	err = f.whileNoSpace("append to "+key, func() (err error) {
		base, err = p.log.Append(data, now)
		return err
	})
	if err != nil && openedHere {
		f.txnMu.Lock()
		delete(p.open, prod.ID)
		f.txnMu.Unlock()
	}
	if testAfterAppend != nil && err == nil {
		testAfterAppend(p)
	}
	switch {
	case errors.Is(err, log.ErrCorruptBatch):
		// Decided by the bytes alone: every replica refuses it alike.
		return ProduceResult{Err: fmt.Errorf("%w: %v", ErrInvalidCommand, err)}
	case err != nil:
		return ProduceResult{Err: f.fail(fmt.Errorf("append to %s: %w", key, err))}
	}
	f.noteEpoch(p, term, base)
	if prod != nil {
		f.txnMu.Lock()
		if prod.Epoch != h.ProducerEpoch {
			prod.Epoch, prod.Parts = h.ProducerEpoch, nil
		}
		prod.record(key, first, last, base)
		prod.LastTimestamp = now
		f.txnMu.Unlock()
		f.dirty.producers[prod.ID] = true
	}
	f.dirty.parts[key] = p
	f.bytesSinceCheckpoint += int64(len(data))
	f.appliedBytes.Add(int64(len(data)))
	return ProduceResult{BaseOffset: base, LogStartOffset: p.log.StartOffset()}
}

// testAfterAppend, set by tests, runs right after a produced batch is
// appended (and published to readers).
var testAfterAppend func(p *partition)

// partition looks a partition up; nil if the topic or partition is unknown.
func (f *fsm) partition(name string, idx int32) *partition {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ts := f.topics[name]
	if ts == nil || idx < 0 || int(idx) >= len(ts.parts) {
		return nil
	}
	return ts.parts[idx]
}

// InitProducerResult is the outcome of an InitProducerId command.
type InitProducerResult struct {
	ProducerID    int64
	ProducerEpoch int16
	Err           error
}

func (f *fsm) applyInitProducer(c *initProducerCmd) InitProducerResult {
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	if c.ProducerID >= 0 {
		// KIP-360: an idempotent producer asks to bump its epoch and keep
		// its id after an error.
		p := f.producers[c.ProducerID]
		if p == nil {
			return InitProducerResult{Err: fmt.Errorf("%w: %d", ErrUnknownProducerID, c.ProducerID)}
		}
		if c.ProducerEpoch != p.Epoch {
			return InitProducerResult{Err: fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, p.ID, c.ProducerEpoch, p.Epoch)}
		}
		if p.Epoch < 32767-1 {
			p.Epoch++
			p.Parts = nil
			p.LastTimestamp = max(p.LastTimestamp, c.Now)
			f.dirty.producers[p.ID] = true
			return InitProducerResult{ProducerID: p.ID, ProducerEpoch: p.Epoch}
		}
		// Epoch exhausted: fall through to a fresh id.
	}
	id := f.nextPID
	f.nextPID++
	f.producers[id] = &producerState{ID: id, LastTimestamp: c.Now}
	f.dirty.producers[id] = true
	f.dirty.meta = true
	return InitProducerResult{ProducerID: id}
}

// DeleteRecordsResult is the outcome for one partition of DeleteRecords.
type DeleteRecordsResult struct {
	LowWatermark int64
	Err          error
}

func (f *fsm) applyDeleteRecords(c *deleteRecordsCmd) []DeleteRecordsResult {
	out := make([]DeleteRecordsResult, len(c.Entries))
	for i, e := range c.Entries {
		p := f.partition(e.Topic, e.Partition)
		if p == nil {
			out[i].Err = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, e.Topic, e.Partition)
			continue
		}
		off := e.Offset
		if off == -1 {
			off = p.log.EndOffset()
		}
		if off < 0 || off > p.log.EndOffset() {
			out[i].Err = fmt.Errorf("%w: %d not in [%d, %d]", ErrInvalidOffset, off, p.log.StartOffset(), p.log.EndOffset())
			continue
		}
		if err := f.whileNoSpace("delete records of "+p.key(), func() error { return p.log.AdvanceStartOffset(off) }); err != nil {
			out[i].Err = f.fail(fmt.Errorf("delete records of %s: %w", p.key(), err))
			return out
		}
		f.dirty.parts[p.key()] = p
		f.trimAborted(p)
		out[i].LowWatermark = p.log.StartOffset()
	}
	return out
}

func (f *fsm) applyRetention(c *retentionCmd) {
	f.mu.RLock()
	var parts []*partition
	for _, ts := range f.topics {
		parts = append(parts, ts.parts...)
	}
	f.mu.RUnlock()
	for _, p := range parts {
		// A try that failed may have dropped segments before its error:
		// they count too.
		var n int
		err := f.whileNoSpace("retention on "+p.key(), func() error {
			k, err := p.log.ApplyRetention(c.Now)
			n += k
			return err
		})
		if err != nil {
			f.fail(fmt.Errorf("retention on %s: %w", p.key(), err))
			return
		}
		if n > 0 {
			f.logger.Info("retention deleted segments", "partition", p.key(), "segments", n, "log_start_offset", p.log.StartOffset())
			f.dirty.parts[p.key()] = p
			f.trimAborted(p)
		}
	}
}
