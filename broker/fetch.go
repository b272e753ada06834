package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// fetchMaxBytes is Kafka's broker fetch.max.bytes default (55 MiB).
const fetchMaxBytes = 57671680

// maxFetchWait caps MaxWaitMillis so a client cannot park a request forever.
const maxFetchWait = 30 * time.Second

// fetch reads committed batches. It long-polls: when less than MinBytes is
// available it waits for the next applied raft batch (no sleeping), up to
// MaxWaitMillis. Fetch sessions (KIP-227) are not kept: the response's
// SessionID is 0, which tells clients to send full fetches.
func (b *Broker) fetch(ctx context.Context, r *kmsg.FetchRequest) kmsg.Response {
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if wait > maxFetchWait {
		wait = maxFetchWait
	}
	var deadline <-chan time.Time
	for {
		// Subscribe before reading, so an append between the read and the
		// wait still wakes us.
		changed := b.store.Changed()
		resp, n, failed := b.fetchOnce(r)
		if failed || n >= int(r.MinBytes) || wait <= 0 || r.MinBytes <= 0 && n > 0 {
			return resp
		}
		if deadline == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			resp, _, _ = b.fetchOnce(r)
			return resp
		case <-ctx.Done():
			return resp
		case <-wire.Draining(ctx):
			// Shutting down: answer now rather than hold shutdown up.
			return resp
		}
	}
}

// fetchOnce builds a response from what is committed now. It reports how
// many record bytes it holds and whether any partition failed (a failure is
// answered at once, as Kafka does).
func (b *Broker) fetchOnce(r *kmsg.FetchRequest) (*kmsg.FetchResponse, int, bool) {
	resp := kmsg.NewPtrFetchResponse()
	if r.SessionID != 0 {
		// We never hand out sessions, so an incremental fetch names one we
		// do not have.
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, 0, true
	}
	// The broker's fetch.max.bytes caps what a client may ask for: a read
	// allocates what it returns.
	maxBytes := min(int(r.MaxBytes), fetchMaxBytes)
	if maxBytes <= 0 {
		maxBytes = fetchMaxBytes
	}
	total, failed := 0, false
	leader := b.store.IsLeader()
	epoch := b.store.LeaderEpoch()
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, known := rt.Topic, true
		if r.Version >= 13 {
			var t topic.Topic
			t, known = b.topicByID(rt.TopicID)
			name = t.Name
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka rejects a null record set.
			sp.RecordBatches = []byte{}
			l, ok := b.store.Log(name, rp.Partition)
			switch code := leaderCheck(ok, leader, rp.CurrentLeaderEpoch, epoch); {
			case !known && r.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case code != 0:
				sp.ErrorCode = code
			default:
				end := l.EndOffset()
				lso := b.store.LastStableOffset(name, rp.Partition)
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = end, lso, l.StartOffset()
				readCommitted := r.IsolationLevel == 1
				if readCommitted {
					// read_committed never sees past the last stable offset.
					end = lso
				}
				limit := int(rp.PartitionMaxBytes)
				if rem := maxBytes - total; rem < limit {
					limit = rem
				}
				if rp.FetchOffset >= end && rp.FetchOffset <= sp.HighWatermark || limit <= 0 && total > 0 {
					break
				}
				if limit <= 0 {
					limit = 1
				}
				data, err := l.Read(rp.FetchOffset, int32(limit))
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if !errors.Is(err, log.ErrOffsetOutOfRange) {
						b.logger.Warn("fetch read failed", "topic", name, "partition", rp.Partition, "offset", rp.FetchOffset, "err", err)
					}
					break
				}
				if readCommitted {
					data = truncateBatchesAt(data, end)
				}
				// KIP-74: only the first non-empty partition may overshoot
				// the response limit.
				if len(data) == 0 || total > 0 && total+len(data) > maxBytes {
					break
				}
				sp.RecordBatches = data
				total += len(data)
				if readCommitted {
					for _, a := range b.store.AbortedTxns(name, rp.Partition, rp.FetchOffset, end) {
						sp.AbortedTransactions = append(sp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
					}
				}
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, failed
}

// truncateBatchesAt drops whole batches that start at or after end (the
// last stable offset): read_committed consumers get nothing undecided.
func truncateBatchesAt(data []byte, end int64) []byte {
	n := 0
	for n < len(data) {
		h, err := log.ParseBatchHeader(data[n:])
		if err != nil || h.BaseOffset >= end {
			break
		}
		n += int(h.Size())
	}
	return data[:n]
}
