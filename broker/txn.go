package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

// The transaction coordinator runs on the raft leader; its state lives in
// the FSM, so a new leader needs nothing rebuilt.

// maxTxnTimeout is transaction.max.timeout.ms.
const maxTxnTimeout = 15 * time.Minute

// txnCode maps a coordinator error to the code a client at this version
// expects: PRODUCER_FENCED exists only from the versions of KIP-588, older
// clients get INVALID_PRODUCER_EPOCH for the same fencing.
func txnCode(err error, version, fencedSince int16) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, raftstore.ErrProducerFenced):
		if version < fencedSince {
			return kerr.InvalidProducerEpoch.Code
		}
		return kerr.ProducerFenced.Code
	case errors.Is(err, raftstore.ErrInvalidPIDMapping):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, raftstore.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, raftstore.ErrOperationNotAttempted):
		return kerr.OperationNotAttempted.Code
	case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, raftstore.ErrUnknownOutcome):
		// Retriable: the client retries, and a retried step is idempotent.
		return kerr.CoordinatorNotAvailable.Code
	}
	return errorCode(err)
}

func (b *Broker) initTxnProducer(ctx context.Context, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > maxTxnTimeout {
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
		return
	}
	if *r.TransactionalID == "" || len(*r.TransactionalID) > raftstore.MaxIDBytes {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		pid, epoch = r.ProducerID, r.ProducerEpoch
	}
	res, err := b.store.InitTxnProducer(ctx, time.Now().UnixMilli(), *r.TransactionalID, r.TransactionTimeoutMillis, pid, epoch)
	if err != nil {
		resp.ErrorCode = txnCode(err, r.Version, 4)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
}

func (b *Broker) addPartitionsToTxn(ctx context.Context, r *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	var parts []raftstore.TopicPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, raftstore.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	var errs []error
	var err error
	if !b.store.IsLeader() {
		err = raftstore.ErrNotLeader
	} else {
		errs, err = b.store.AddPartitionsToTxn(ctx, time.Now().UnixMilli(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, parts)
	}
	i := 0
	for _, t := range r.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = p
			if err != nil {
				sp.ErrorCode = txnCode(err, r.Version, 2)
			} else {
				sp.ErrorCode = txnCode(errs[i], r.Version, 2)
			}
			i++
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) addOffsetsToTxn(ctx context.Context, r *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	if !b.store.IsLeader() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	err := b.store.AddOffsetsToTxn(ctx, time.Now().UnixMilli(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group)
	resp.ErrorCode = txnCode(err, r.Version, 2)
	return resp
}

func (b *Broker) txnOffsetCommit(ctx context.Context, r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	var offs []raftstore.OffsetCommit
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			o := raftstore.OffsetCommit{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1}
			if r.Version >= 2 {
				o.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			offs = append(offs, o)
		}
	}
	var errs []error
	var err error
	switch {
	case !b.store.IsLeader():
		err = raftstore.ErrNotLeader
	default:
		err = b.checkTxnGroupMember(r)
		if err == nil {
			errs, err = b.store.TxnOffsetCommit(ctx, time.Now().UnixMilli(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group, offs)
		}
	}
	i := 0
	for _, t := range r.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			if err != nil {
				sp.ErrorCode = txnCode(err, r.Version, 3)
			} else {
				sp.ErrorCode = txnCode(errs[i], r.Version, 3)
			}
			i++
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *Broker) endTxn(ctx context.Context, r *kmsg.EndTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrEndTxnResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !b.store.IsLeader() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	err := b.store.EndTxn(ctx, time.Now().UnixMilli(), r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
	resp.ErrorCode = txnCode(err, r.Version, 2)
	if err != nil {
		b.logger.Debug("end txn failed", "transactional_id", r.TransactionalID, "commit", r.Commit, "err", err)
	}
	return resp
}
