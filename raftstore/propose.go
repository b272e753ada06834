package raftstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// propose hands a command to raft and waits for it to be applied. The
// returned value is what the FSM returned for it.
func (s *Store) propose(ctx context.Context, data []byte) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
	f := s.raft.Apply(data, s.cfg.ApplyTimeout)
	if err := s.await(ctx, f); err != nil {
		return nil, err
	}
	return f.Response(), nil
}

// await waits for a raft future, or for the store to close or ctx to end.
// raft strands a future that was enqueued but not yet taken when it shuts
// down (its batched apply channel is buffered): waiting on it alone could
// hang forever, and with it Close.
func (s *Store) await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return mapRaftErr(err)
		}
		return nil
	case <-s.stop:
		return fmt.Errorf("%w: the store is closing", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, ctx.Err())
	}
}

func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
		// Never entered the log: a clean "go elsewhere".
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, ErrStorage):
		// The leader could not write it to its own log (walStore), so it
		// was never replicated: a clean refusal.
		return err
	default:
		// ErrLeadershipLost and anything else: it may still commit.
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
}

// proposeJSON proposes a metadata command whose FSM result is an error.
func (s *Store) proposeJSON(ctx context.Context, t cmdType, v any) error {
	data, err := encodeJSON(t, v)
	if err != nil {
		return err
	}
	return s.proposeErr(ctx, data)
}

// proposeErr proposes an encoded command whose answer is an error or nil.
func (s *Store) proposeErr(ctx context.Context, data []byte) error {
	resp, err := s.propose(ctx, data)
	if err != nil {
		return err
	}
	if e, ok := resp.(error); ok && e != nil {
		return e
	}
	return nil
}

// CreateTopic creates a topic with the given partitions and config overrides.
func (s *Store) CreateTopic(ctx context.Context, name string, id [16]byte, partitions int32, configs map[string]string) error {
	if err := s.admitWrite(); err != nil {
		return err
	}
	return s.proposeJSON(ctx, cmdCreateTopic, createTopicCmd{Name: name, ID: id, Partitions: partitions, Configs: configs})
}

// DeleteTopic deletes a topic and its data.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	return s.proposeJSON(ctx, cmdDeleteTopic, deleteTopicCmd{Name: name, Now: time.Now().UnixMilli()})
}

// CreatePartitions grows a topic to count partitions.
func (s *Store) CreatePartitions(ctx context.Context, name string, count int32) error {
	if err := s.admitWrite(); err != nil {
		return err
	}
	return s.proposeJSON(ctx, cmdCreatePartitions, createPartitionsCmd{Name: name, Count: count})
}

// AlterConfigs changes a topic's config overrides. With replace, set becomes
// the whole override set (AlterConfigs); otherwise set and del are applied
// to the current overrides (IncrementalAlterConfigs).
func (s *Store) AlterConfigs(ctx context.Context, name string, replace bool, set map[string]string, del []string) error {
	return s.proposeJSON(ctx, cmdAlterConfigs, alterConfigsCmd{Name: name, Replace: replace, Set: set, Delete: del})
}

// Produce appends batches in one raft entry, stamped with now (unix ms), and
// returns one result per batch once the entry is applied.
func (s *Store) Produce(ctx context.Context, now int64, batches []ProduceBatch) ([]ProduceResult, error) {
	return s.StartProduce(ctx, now, "", batches).Wait()
}

// MaxBatchBytes caps one record batch, whatever max.message.bytes says:
// a raft entry must stay well inside what raft's log store can read back
// (raft-wal refuses entries over 64 MiB on read).
const MaxBatchBytes = 32 << 20

// maxEntryBytes is how many batch bytes share one raft entry; a produce
// request with more is split into several entries, applied in order. With
// maxAppendEntries it bounds one AppendEntries RPC to a follower: entries
// of many MiB times hundreds made RPCs of hundreds of MiB that timed out
// on the transport and stalled a follower's catch-up. (One batch is never
// split, so an entry may reach MaxBatchBytes when max.message.bytes
// allows batches that large.)
const maxEntryBytes = 4 << 20

// maxAppendEntries is raft's MaxAppendEntries: at most this many entries
// (of at most maxEntryBytes, normally) go in one AppendEntries RPC.
const maxAppendEntries = 64

// chunkBatches splits batches into groups of at most maxEntryBytes (a
// single batch is never split).
func chunkBatches(batches []ProduceBatch) [][]ProduceBatch {
	var out [][]ProduceBatch
	start, size := 0, 0
	for i, b := range batches {
		if i > start && size+len(b.Data) > maxEntryBytes {
			out = append(out, batches[start:i])
			start, size = i, 0
		}
		size += len(b.Data)
	}
	return append(out, batches[start:])
}

// checkTxnID refuses a transactional id a produce command cannot carry.
func checkTxnID(txnID string) error {
	if len(txnID) > maxTxnIDBytes {
		return fmt.Errorf("%w: transactional id of %d bytes (at most %d)", ErrInvalidCommand, len(txnID), maxTxnIDBytes)
	}
	return nil
}

// PendingProduce is a produce handed to raft but not yet applied.
type PendingProduce struct {
	s   *Store
	fs  []raft.ApplyFuture
	err error
}

// StartProduce hands batches to raft and returns without waiting for the
// commit. Commands started one after another are applied in that order, so
// a connection's pipelined produce requests keep their order. txnID is the
// request's transactional id ("" for none).
func (s *Store) StartProduce(ctx context.Context, now int64, txnID string, batches []ProduceBatch) *PendingProduce {
	if err := ctx.Err(); err != nil {
		return &PendingProduce{err: fmt.Errorf("%w: %v", ErrUnknownOutcome, err)}
	}
	if err := s.admitWrite(); err != nil {
		return &PendingProduce{err: err}
	}
	if err := checkTxnID(txnID); err != nil {
		return &PendingProduce{err: err}
	}
	p := &PendingProduce{s: s}
	for i, c := range chunkBatches(batches) {
		f, err := s.proposeBounded(ctx, encodeProduce(&produceCmd{Now: now, TxnID: txnID, Batches: c}))
		if err != nil {
			if i > 0 {
				// The chunks before were proposed: their outcome is not
				// known to the caller.
				err = fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
			}
			return &PendingProduce{err: err}
		}
		p.fs = append(p.fs, f)
	}
	return p
}

// Wait blocks until the batches are applied and returns their results, in
// the order they were given.
func (p *PendingProduce) Wait() ([]ProduceResult, error) {
	if p.err != nil {
		return nil, p.err
	}
	var out []ProduceResult
	for _, f := range p.fs {
		if err := p.s.await(context.Background(), f); err != nil {
			return nil, err
		}
		switch r := f.Response().(type) {
		case []ProduceResult:
			out = append(out, r...)
		case error:
			return nil, r
		default:
			return nil, fmt.Errorf("%w: unexpected produce result %T", ErrInvalidCommand, r)
		}
	}
	return out, nil
}

// ProduceAsync proposes batches without waiting for the outcome (acks=0).
// It returns an error only when the batches were refused before raft
// (a full disk).
func (s *Store) ProduceAsync(now int64, txnID string, batches []ProduceBatch) error {
	if err := s.admitWrite(); err != nil {
		return err
	}
	if err := checkTxnID(txnID); err != nil {
		return err
	}
	ctx, cancel := s.stopContext()
	defer cancel()
	for _, c := range chunkBatches(batches) {
		f, err := s.proposeBounded(ctx, encodeProduce(&produceCmd{Now: now, TxnID: txnID, Batches: c}))
		if err != nil {
			return err
		}
		go func() {
			if err := f.Error(); err != nil {
				s.logger.Debug("unacknowledged proposal failed", "err", err)
			}
		}()
	}
	return nil
}

// InitProducerID allocates a producer id, or bumps the epoch of an existing
// one when producerID >= 0 (KIP-360).
func (s *Store) InitProducerID(ctx context.Context, producerID int64, epoch int16) (InitProducerResult, error) {
	r, err := proposeFor[InitProducerResult](ctx, s, cmdInitProducer, initProducerCmd{ProducerID: producerID, ProducerEpoch: epoch, Now: time.Now().UnixMilli()})
	if err != nil {
		return r, err
	}
	return r, r.Err
}

// DeleteRecords moves log start offsets up.
func (s *Store) DeleteRecords(ctx context.Context, now int64, specs []DeleteRecordsSpec) ([]DeleteRecordsResult, error) {
	return proposeFor[[]DeleteRecordsResult](ctx, s, cmdDeleteRecords, deleteRecordsCmd{Now: now, Entries: specs})
}

// proposeFor proposes a JSON command whose FSM result is a T, or an error.
func proposeFor[T any](ctx context.Context, s *Store, t cmdType, v any) (T, error) {
	var zero T
	data, err := encodeJSON(t, v)
	if err != nil {
		return zero, err
	}
	resp, err := s.propose(ctx, data)
	if err != nil {
		return zero, err
	}
	switch r := resp.(type) {
	case T:
		return r, nil
	case error:
		return zero, r
	}
	return zero, fmt.Errorf("%w: unexpected %s result %T", ErrInvalidCommand, t, resp)
}

// ApplyRetention proposes a retention pass stamped with now (unix ms).
func (s *Store) ApplyRetention(ctx context.Context, now int64) error {
	return s.proposeJSON(ctx, cmdRetention, retentionCmd{Now: now})
}
