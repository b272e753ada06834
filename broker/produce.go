package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// produce validates every partition's batch, proposes all valid batches as
// one raft entry, and answers once it is applied (acks 1 and -1 both wait
// for a raft quorum; acks 0 does not wait and sends no response). With
// acks 0, a partition refused closes the connection once the valid ones
// are handed to raft, after the responses to the requests before it, as
// Kafka does: it is the only way the client learns.
//
// Validation runs concurrently; handing the batches to raft runs in the
// connection's request order (wire.Request.InOrder), so pipelined requests
// from one producer are appended in the order they were sent.
func (b *Broker) produce(ctx context.Context, req *wire.Request, r *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrProduceResponse()
	type slot struct{ t, p int }
	var batches []raftstore.ProduceBatch
	var slots []slot
	acksOK := r.Acks == 0 || r.Acks == 1 || r.Acks == -1
	leader := b.store.IsLeader()
	dups := duplicatePartitions(r)
	// As Kafka: transactional batches need a transactional id, whatever
	// the authorizer says (before v3 a Produce cannot carry one).
	txnIDMissing := r.TransactionID == nil && hasTransactionalBatch(r)
	var refused error // the first partition refused
	for ti, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		t, known := b.store.Topic(rt.Topic)
		maxBytes := min(int(topic.Resolve(t.Configs, b.defaults()).Int32(topic.MaxMessageBytes)), raftstore.MaxBatchBytes)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var err error
			switch {
			case txnIDMissing:
				err = kerr.TransactionalIDAuthorizationFailed
			case !acksOK:
				err = kerr.InvalidRequiredAcks
			case topic.ValidateName(rt.Topic) != nil:
				err = kerr.InvalidTopicException
			case topic.IsInternal(rt.Topic):
				err = internalTopicWrite(rt.Topic, "append to")
			case !known || rp.Partition < 0 || rp.Partition >= t.Partitions:
				err = kerr.UnknownTopicOrPartition
			case !leader:
				err = kerr.NotLeaderForPartition
			case dups[tp{rt.Topic, rp.Partition}]:
				// Neither is appended: Kafka keeps the last silently,
				// which loses the first without an error.
				err = fmt.Errorf("%w: partition %s-%d appears more than once in one Produce request", log.ErrInvalidRecord, rt.Topic, rp.Partition)
			default:
				_, err = log.ValidateClientBatch(rp.Records, maxBytes)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				sp.ErrorMessage = errorMessage(err)
				if refused == nil {
					refused = fmt.Errorf("acks=0 produce to %s-%d refused: %w", rt.Topic, rp.Partition, err)
				}
			} else {
				batches = append(batches, raftstore.ProduceBatch{Topic: rt.Topic, Partition: rp.Partition, Data: rp.Records})
				slots = append(slots, slot{ti, len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(batches) == 0 {
		if r.Acks == 0 && refused != nil {
			// The close comes after the requests before this one are
			// handed to raft, as their order asks, and none after it is.
			_ = req.InOrder(ctx, req.StopOrder)
			return resp, refusedAcks0(refused)
		}
		req.ReleaseOrder()
		if r.Acks == 0 {
			return nil, nil
		}
		return resp, nil
	}
	var pending *raftstore.PendingProduce
	err := req.InOrder(ctx, func() {
		now := time.Now().UnixMilli()
		if r.Acks == 0 {
			if err := b.store.ProduceAsync(now, txnIDOf(r), batches); err != nil {
				// A full disk: the connection's close is how an acks=0
				// client learns.
				for _, s := range slots {
					sp := &resp.Topics[s.t].Partitions[s.p]
					sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
				}
				if refused == nil {
					refused = fmt.Errorf("acks=0 produce refused: %w", err)
				}
			}
			if refused != nil {
				req.StopOrder()
			}
			return
		}
		pending = b.store.StartProduce(ctx, now, txnIDOf(r), batches)
	})
	if r.Acks == 0 {
		if err != nil && refused == nil {
			// An earlier request closed the connection: nothing here
			// reached raft.
			for _, s := range slots {
				sp := &resp.Topics[s.t].Partitions[s.p]
				sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
			}
			refused = fmt.Errorf("acks=0 produce not handed to raft: %w", err)
		}
		if refused != nil {
			// Never written; it tells the metrics what was appended.
			return resp, refusedAcks0(refused)
		}
		return nil, nil
	}
	var results []raftstore.ProduceResult
	if err == nil {
		results, err = pending.Wait()
	} else {
		err = fmt.Errorf("%w: %v", raftstore.ErrUnknownOutcome, err)
	}
	for i, s := range slots {
		sp := &resp.Topics[s.t].Partitions[s.p]
		if err != nil {
			sp.ErrorCode = errorCode(err)
			sp.ErrorMessage = errorMessage(err)
			continue
		}
		res := results[i]
		if res.Err != nil {
			sp.ErrorCode = errorCode(res.Err)
			sp.ErrorMessage = errorMessage(res.Err)
			continue
		}
		sp.BaseOffset = res.BaseOffset
		sp.LogStartOffset = res.LogStartOffset
	}
	if err != nil {
		b.logger.Debug("produce proposal failed", "err", err)
	}
	return resp, nil
}

// refusedAcks0 is the error that closes, in request order, the connection
// of an acks=0 produce with a partition refused, or nil. (The handler
// instrumentation logs it, rate-limited.)
func refusedAcks0(refused error) error {
	if refused == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", wire.ErrCloseInOrder, refused)
}

type tp struct {
	topic     string
	partition int32
}

// duplicatePartitions returns the partitions a Produce request names more
// than once, or nil.
func duplicatePartitions(r *kmsg.ProduceRequest) map[tp]bool {
	n := 0
	for _, rt := range r.Topics {
		n += len(rt.Partitions)
	}
	if n < 2 {
		return nil
	}
	seen := make(map[tp]bool, n)
	var dups map[tp]bool
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			k := tp{rt.Topic, rp.Partition}
			if seen[k] {
				if dups == nil {
					dups = map[tp]bool{}
				}
				dups[k] = true
			}
			seen[k] = true
		}
	}
	return dups
}

// defaults are the broker-level topic config defaults.
func (b *Broker) defaults() topic.Defaults { return b.store.Defaults() }
