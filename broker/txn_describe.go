package broker

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

func (b *Broker) describeTransactions(r *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	leader := b.store.IsLeader()
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		t, ok := b.store.Txn(id)
		switch {
		case !leader:
			st.ErrorCode = kerr.NotCoordinator.Code
		case !ok:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.State, st.TimeoutMillis = t.State, t.TimeoutMs
			st.ProducerID, st.ProducerEpoch = t.ProducerID, t.ProducerEpoch
			if t.State == raftstore.TxnOngoing {
				st.StartTimestamp = t.StartTime
			}
			for _, tp := range t.Partitions {
				n := len(st.Topics)
				if n == 0 || st.Topics[n-1].Topic != tp.Topic {
					st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
					n++
				}
				st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// knownTxnStates are the states ListTransactions can filter on.
var knownTxnStates = []string{raftstore.TxnEmpty, raftstore.TxnOngoing, raftstore.TxnCompleteCommit, raftstore.TxnCompleteAbort,
	"PrepareCommit", "PrepareAbort", "PrepareEpochFence", "Dead"}

func (b *Broker) listTransactions(r *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := kmsg.NewPtrListTransactionsResponse()
	if !b.store.IsLeader() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	for _, s := range r.StateFilters {
		if !slices.Contains(knownTxnStates, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	var pattern *regexp.Regexp
	if r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*r.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
		pattern = re
	}
	now := time.Now().UnixMilli()
	for _, t := range b.store.Txns() {
		if len(r.StateFilters) > 0 && !slices.Contains(r.StateFilters, t.State) {
			continue
		}
		if len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, t.ProducerID) {
			continue
		}
		if r.DurationFilterMillis >= 0 && r.Version >= 1 && (t.State != raftstore.TxnOngoing || now-t.StartTime < r.DurationFilterMillis) {
			continue
		}
		if pattern != nil && !pattern.MatchString(t.ID) {
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
			TransactionalID: t.ID, ProducerID: t.ProducerID, TransactionState: t.State,
		})
	}
	return resp
}

func (b *Broker) describeProducers(r *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeProducersResponse()
	leader := b.store.IsLeader()
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			prods, ok := b.store.PartitionProducers(rt.Topic, p)
			switch {
			case !ok && b.internalPartition(rt.Topic, p):
				// An internal topic: no producers write to it.
				if !leader {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			case !ok:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !leader:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, pi := range prods {
					sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
						ProducerID: pi.ProducerID, ProducerEpoch: int32(pi.ProducerEpoch), LastSequence: pi.LastSequence,
						LastTimestamp: pi.LastTimestamp, CoordinatorEpoch: -1, CurrentTxnStartOffset: pi.TxnStartOffset,
					})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
