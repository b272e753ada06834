package raftstore

import (
	"fmt"
	"slices"

	"github.com/brokerd/brokerd/log"
)

// maxEpoch is the last usable producer epoch; past it a producer gets a new
// id.
const maxEpoch = 32767 - 1

func (f *fsm) applyInitTxnProducer(c *initTxnProducerCmd, term int32) InitProducerResult {
	if c.TxnID == "" || len(c.TxnID) > MaxIDBytes {
		return InitProducerResult{Err: fmt.Errorf("%w: transactional id of %d bytes (1 to %d)", ErrInvalidCommand, len(c.TxnID), MaxIDBytes)}
	}
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	t := f.txns[c.TxnID]
	if t == nil {
		id := f.nextPID
		f.nextPID++
		f.producers[id] = &producerState{ID: id, TxnID: c.TxnID, LastTimestamp: c.Now}
		f.txns[c.TxnID] = &TxnState{ID: c.TxnID, ProducerID: id, State: TxnEmpty, TimeoutMs: c.TimeoutMs, LastUpdate: c.Now}
		f.dirty.producers[id] = true
		f.dirty.txns[c.TxnID] = true
		f.dirty.meta = true
		return InitProducerResult{ProducerID: id}
	}
	if c.ProducerID >= 0 && (c.ProducerID != t.ProducerID || c.ProducerEpoch != t.ProducerEpoch) {
		// KIP-360: a producer that knows its id and epoch may only bump
		// the current ones.
		return InitProducerResult{Err: fmt.Errorf("%w: transactional id %s is producer %d epoch %d, request has %d epoch %d",
			ErrProducerFenced, c.TxnID, t.ProducerID, t.ProducerEpoch, c.ProducerID, c.ProducerEpoch)}
	}
	if t.State == TxnOngoing {
		// A new incarnation of the producer: abort what the old one left.
		f.finishTxn(t, false, c.Now, term)
	}
	if t.ProducerEpoch >= maxEpoch {
		id := f.nextPID
		f.nextPID++
		f.dirty.meta = true
		t.ProducerID, t.ProducerEpoch = id, 0
		f.producers[id] = &producerState{ID: id, TxnID: c.TxnID, LastTimestamp: c.Now}
	} else {
		t.ProducerEpoch++
	}
	p := f.producers[t.ProducerID]
	p.Epoch, p.Parts = t.ProducerEpoch, nil
	t.State, t.TimeoutMs, t.LastUpdate = TxnEmpty, c.TimeoutMs, c.Now
	f.dirty.producers[p.ID] = true
	f.dirty.txns[c.TxnID] = true
	return InitProducerResult{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch}
}

// beginTxn moves a transaction to Ongoing, clearing a completed one.
func beginTxn(t *TxnState, now int64) {
	if t.State != TxnOngoing {
		t.State = TxnOngoing
		t.StartTime = now
		t.Partitions, t.Groups, t.PendingOffsets = nil, nil, nil
	}
	t.LastUpdate = now
}

// applyAddPartitionsToTxn returns one error per partition, or a single
// error for the whole request.
func (f *fsm) applyAddPartitionsToTxn(c *addPartitionsToTxnCmd) any {
	missing := make([]bool, len(c.Partitions))
	anyMissing := false
	for i, tp := range c.Partitions {
		if f.partition(tp.Topic, tp.Partition) == nil {
			missing[i], anyMissing = true, true
		}
	}
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	t := f.txns[c.TxnID]
	if err := checkTxnEpoch(t, c.ProducerID, c.ProducerEpoch); err != nil {
		return err
	}
	out := make([]error, len(c.Partitions))
	if anyMissing {
		// Kafka adds nothing when any partition is bad.
		for i, tp := range c.Partitions {
			if missing[i] {
				out[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, tp.Topic, tp.Partition)
			} else {
				out[i] = ErrOperationNotAttempted
			}
		}
		return out
	}
	beginTxn(t, c.Now)
	for _, tp := range c.Partitions {
		t.Partitions = addTP(t.Partitions, tp)
	}
	f.dirty.txns[c.TxnID] = true
	return out
}

func (f *fsm) applyAddOffsetsToTxn(c *addOffsetsToTxnCmd) error {
	if len(c.Group) > MaxIDBytes {
		return ErrInvalidGroupID
	}
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	t := f.txns[c.TxnID]
	if err := checkTxnEpoch(t, c.ProducerID, c.ProducerEpoch); err != nil {
		return err
	}
	beginTxn(t, c.Now)
	if i, found := slices.BinarySearch(t.Groups, c.Group); !found {
		t.Groups = slices.Insert(t.Groups, i, c.Group)
	}
	f.dirty.txns[c.TxnID] = true
	return nil
}

// applyTxnOffsetCommit stages offsets that become visible when the
// transaction commits. It returns one error per offset, or one error.
func (f *fsm) applyTxnOffsetCommit(c *txnOffsetCommitCmd) any {
	if len(c.Group) > MaxIDBytes {
		return ErrInvalidGroupID
	}
	out := make([]error, len(c.Offsets))
	for i, o := range c.Offsets {
		if !f.offsetTarget(o.Topic, o.Partition) {
			out[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, o.Topic, o.Partition)
		}
	}
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	t := f.txns[c.TxnID]
	if err := checkTxnEpoch(t, c.ProducerID, c.ProducerEpoch); err != nil {
		return err
	}
	if t.State != TxnOngoing || !slices.Contains(t.Groups, c.Group) {
		return fmt.Errorf("%w: group %s was not added to transaction %s (state %s)", ErrInvalidTxnState, c.Group, c.TxnID, t.State)
	}
	if t.PendingOffsets == nil {
		t.PendingOffsets = map[string]map[string]OffsetCommit{}
	}
	pend := t.PendingOffsets[c.Group]
	if pend == nil {
		pend = map[string]OffsetCommit{}
		t.PendingOffsets[c.Group] = pend
	}
	for i, o := range c.Offsets {
		if out[i] == nil {
			o.CommitTime = c.Now
			pend[partKey(o.Topic, o.Partition)] = o
		}
	}
	t.LastUpdate = c.Now
	f.dirty.txns[c.TxnID] = true
	return out
}

func (f *fsm) applyEndTxn(c *endTxnCmd, term int32) error {
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	t := f.txns[c.TxnID]
	if err := checkTxnEpoch(t, c.ProducerID, c.ProducerEpoch); err != nil {
		return err
	}
	switch t.State {
	case TxnOngoing:
	case TxnCompleteCommit, TxnCompleteAbort:
		if (t.State == TxnCompleteCommit) == c.Commit && !c.Timeout {
			return nil // a retry of the EndTxn that completed it
		}
		return fmt.Errorf("%w: transaction %s is %s", ErrInvalidTxnState, c.TxnID, t.State)
	default:
		if c.Timeout {
			return nil
		}
		return fmt.Errorf("%w: transaction %s is %s", ErrInvalidTxnState, c.TxnID, t.State)
	}
	f.finishTxn(t, c.Commit, c.Now, term)
	if f.stopped {
		return errStopped
	}
	if c.Timeout {
		// Fence the producer that let its transaction time out.
		if t.ProducerEpoch < maxEpoch {
			t.ProducerEpoch++
			if p := f.producers[t.ProducerID]; p != nil {
				p.Epoch, p.Parts = t.ProducerEpoch, nil
				f.dirty.producers[p.ID] = true
			}
		}
	}
	return nil
}

// finishTxn writes the markers of an ongoing transaction to every partition
// in it and, on commit, makes its offsets visible: all in the one apply.
// Called with txnMu held.
func (f *fsm) finishTxn(t *TxnState, commit bool, now int64, term int32) {
	for _, tp := range t.Partitions {
		p := f.partition(tp.Topic, tp.Partition)
		if p == nil {
			continue // deleted while the transaction ran
		}
		data := controlBatch(t.ProducerID, t.ProducerEpoch, commit, now, 0)
		log.SetLeaderEpoch(data, term)
		base, err := p.log.Append(data, now)
		if isNoSpace(err) {
			// Every Fetch reads the last stable offset under txnMu: it
			// must not wait for the disk with this goroutine, the only
			// one that writes what txnMu guards. Readers meanwhile see
			// the markers written so far, as Kafka's do.
			f.txnMu.Unlock()
			err = f.whileNoSpace("append to "+p.key(), func() (err error) {
				base, err = p.log.Append(data, now)
				return err
			})
			f.txnMu.Lock()
		}
		if err != nil {
			// Skipping the marker would leave this replica's last
			// stable offset stuck where the others moved on.
			f.fail(fmt.Errorf("append transaction marker to %s: %w", p.key(), err))
			return
		}
		f.noteEpoch(p, term, base)
		if first, ok := p.open[t.ProducerID]; ok {
			if !commit {
				p.aborted = append(p.aborted, AbortedTxn{ProducerID: t.ProducerID, FirstOffset: first, LastOffset: base})
			}
			delete(p.open, t.ProducerID)
		}
		f.dirty.parts[p.key()] = p
	}
	if commit {
		f.mu.Lock()
		for group, offs := range t.PendingOffsets {
			g := f.groups[group]
			if g == nil {
				g = groupOffsets{}
				f.groups[group] = g
			}
			for k, o := range offs {
				g[k] = o
				f.dirty.offsets[offsetKey(group, o.Topic, o.Partition)] = true
			}
		}
		f.mu.Unlock()
	}
	t.State = TxnCompleteAbort
	if commit {
		t.State = TxnCompleteCommit
	}
	t.Partitions, t.Groups, t.PendingOffsets = nil, nil, nil
	t.LastUpdate = now
	f.dirty.txns[t.ID] = true
}

// noteTxnWrite records that pid's transaction has a batch at base on p,
// unless it is open there already; added says whether it opened it.
func (f *fsm) noteTxnWrite(p *partition, pid, base int64) (added bool) {
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	if _, ok := p.open[pid]; !ok {
		if p.open == nil {
			p.open = map[int64]int64{}
		}
		p.open[pid] = base
		return true
	}
	return false
}

// checkTxnProduce decides whether a transactional batch may be written.
func (f *fsm) checkTxnProduce(prod *producerState, tp TopicPartition) error {
	f.txnMu.RLock()
	defer f.txnMu.RUnlock()
	if prod.TxnID == "" {
		return fmt.Errorf("%w: producer %d has no transactional id", ErrInvalidTxnState, prod.ID)
	}
	t := f.txns[prod.TxnID]
	if t == nil || t.State != TxnOngoing || !hasTP(t.Partitions, tp) {
		return fmt.Errorf("%w: %s-%d was not added to the transaction of %s", ErrInvalidTxnState, tp.Topic, tp.Partition, prod.TxnID)
	}
	return nil
}
