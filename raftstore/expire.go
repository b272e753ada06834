package raftstore

import (
	"context"
	"time"
)

// Producer and transactional-id expiry, as Kafka has it, so that the state
// of producers that have gone away does not grow without bound:
//
//   - transactional.id.expiration.ms (default 7 days): a transactional id
//     with no transaction in progress and no activity for this long is
//     forgotten, together with its producer id;
//   - producer.id.expiration.ms (default 1 day): an idempotent producer
//     (or a transactional id's retired producer id) that has not written
//     for this long is forgotten. A retry from it after that gets
//     UNKNOWN_PRODUCER_ID, as in Kafka.
//
// Expiry is a raft command carrying the leader's clock and settings, so
// every replica forgets the same producers at the same entry.

// Kafka's defaults.
const (
	DefaultProducerIDExpiration      = 24 * time.Hour
	DefaultTransactionalIDExpiration = 7 * 24 * time.Hour
	DefaultProducerExpirationCheck   = 10 * time.Minute
)

type expireProducersCmd struct {
	Now                 int64 `json:"now"`
	ProducerIDExpiry    int64 `json:"producer_id_expiration_ms"`
	TransactionalExpiry int64 `json:"transactional_id_expiration_ms"`
}

func (f *fsm) applyExpireProducers(c *expireProducersCmd) {
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	for id, t := range f.txns {
		switch t.State {
		case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
		default:
			continue // a transaction in progress times out first
		}
		if c.Now-t.LastUpdate < c.TransactionalExpiry {
			continue
		}
		delete(f.txns, id)
		f.dirty.txns[id] = true
		if p := f.producers[t.ProducerID]; p != nil && p.TxnID == id {
			delete(f.producers, p.ID)
			f.dirty.producers[p.ID] = true
		}
	}
	for id, p := range f.producers {
		if t := f.txns[p.TxnID]; p.TxnID != "" && t != nil && t.ProducerID == id {
			continue // a live transactional id's producer goes with it
		}
		if p.LastTimestamp == 0 {
			// Written before producers carried a clock: start it now.
			p.LastTimestamp = c.Now
			f.dirty.producers[id] = true
			continue
		}
		if c.Now-p.LastTimestamp >= c.ProducerIDExpiry {
			delete(f.producers, id)
			f.dirty.producers[id] = true
		}
	}
}

// trimAborted drops aborted-transaction entries that end below the log
// start offset: no fetch can need them once their records are gone.
func (f *fsm) trimAborted(p *partition) {
	start := p.log.StartOffset()
	f.txnMu.Lock()
	defer f.txnMu.Unlock()
	n := 0
	for n < len(p.aborted) && p.aborted[n].LastOffset < start {
		n++
	}
	if n == 0 {
		return
	}
	p.aborted = append([]AbortedTxn(nil), p.aborted[n:]...)
	f.dirty.parts[p.key()] = p
}

// ExpireProducers proposes a pass of producer and transactional-id expiry
// stamped with now.
func (s *Store) ExpireProducers(ctx context.Context, now time.Time) error {
	return s.proposeJSON(ctx, cmdExpireProducers, expireProducersCmd{
		Now:                 now.UnixMilli(),
		ProducerIDExpiry:    s.cfg.ProducerIDExpiration.Milliseconds(),
		TransactionalExpiry: s.cfg.TransactionalIDExpiration.Milliseconds(),
	})
}
