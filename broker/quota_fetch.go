package broker

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore/quota"
)

// consumer_byte_rate, as Kafka's KafkaApis.handleFetchRequest enforces it:
// a Fetch may not ask for more than the quota lets through in one window
// span (capFetchBytes), and a Fetch whose response would take its client
// over the quota is answered empty with its throttle time, the bytes it
// read taken back off the rate (throttleFetch). Every Fetch is metered,
// whatever its replica_id: brokerd replicates by raft, so no Kafka
// follower's fetches need exempting, and a client that claims a replica
// id (which the authorizer checks against ClusterAction) gains nothing.

// capFetchBytes lowers r.MaxBytes to what the client's consumer quota lets
// through at once (Kafka's getMaxValueInQuotaWindow).
func (b *Broker) capFetchBytes(req *wire.Request, r *kmsg.FetchRequest) {
	if req == nil || b.store.Quotas().Len() == 0 {
		return
	}
	user, client := quotaClient(req)
	v, ok := b.quotas.MaxValue(quota.ConsumerByteRate, user, client, time.Now())
	if !ok {
		return
	}
	r.MaxBytes = int32(max(1, min(float64(r.MaxBytes), v, math.MaxInt32)))
}

// throttleFetch records what a Fetch read against its client's consumer
// quota; if that throttles the client it takes the bytes back, releases
// what was read and returns the empty, throttled response. It returns nil
// when the fetch is answered as read.
func (b *Broker) throttleFetch(req *wire.Request, fc *fetchsession.Context, read []kmsg.FetchResponseTopicPartition, bufs *fetchBufs) *kmsg.FetchResponse {
	if req == nil || b.store.Quotas().Len() == 0 {
		return nil
	}
	n := 0
	for i := range read {
		n += len(read[i].RecordBatches) + bufs.fileLen(i)
	}
	user, client := quotaClient(req)
	now := time.Now()
	d := b.quotas.Record(quota.ConsumerByteRate, user, client, float64(n), now)
	if d <= 0 {
		return nil
	}
	b.quotas.Unrecord(quota.ConsumerByteRate, user, client, float64(n), now)
	bufs.release()
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID, resp.ErrorCode = fc.Throttled()
	resp.ThrottleMillis = throttleMillis(d)
	return resp
}

// throttleMillis is d in the wire's int32 milliseconds, rounded up so a
// throttle is never answered as 0.
func throttleMillis(d time.Duration) int32 {
	return int32(min((d+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
}
