package broker

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/throttle"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore/quota"
)

// Enforcing client quotas on each request, as Kafka's KafkaApis does:
// Produce is measured by its request size against producer_byte_rate,
// a Fetch by its response's record bytes against consumer_byte_rate
// (quota_fetch.go), and the time handlers spend against
// request_percentage. A client over a quota is not refused: its response
// carries throttle_time_ms and its connection is muted that long
// (wire.Request.Throttle); for response versions before KIP-219 the
// response itself is delayed.

// newQuotaManager returns the broker's quota enforcement.
func newQuotaManager(cfg Config, index func() *quota.Index) *throttle.Manager {
	return throttle.New(cfg.QuotaWindow, index)
}

// quotaClient is the user name and client id quotas know req's client by.
func quotaClient(req *wire.Request) (user, client string) {
	if req.Header.ClientID != nil {
		client = *req.Header.ClientID
	}
	return quotaUser(req.Principal), client
}

// quotaUser is the user name quotas know a principal by: Kafka's
// KafkaPrincipal.getName, "alice" for User:alice.
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// requestTimeMetered reports whether a request's handler time counts
// against request_percentage. Handler time is wall time: Produce and Fetch
// handlers mostly wait (for the raft commit, for a long poll), JoinGroup
// and SyncGroup for other members, and that waiting cannot yet be told
// from work, so they are left to the byte rates; ApiVersions stays
// unmetered so a throttled client can still negotiate. Kafka meters all of
// them by thread time (docs/SECURITY.md, Quotas).
func requestTimeMetered(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Produce, kmsg.Fetch, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.ApiVersions:
		return false
	}
	return true
}

// enforceQuotas records what the request cost its client, and throttles
// the client if that takes it over a quota. resp may be nil (acks=0
// Produce): the connection is still muted. It must run before the handler
// returns to the wire layer.
func (b *Broker) enforceQuotas(req *wire.Request, resp kmsg.Response, start time.Time) {
	if b.store.Quotas().Len() == 0 {
		return
	}
	now := time.Now()
	user, client := quotaClient(req)
	var d time.Duration
	switch req.Msg.(type) {
	case *kmsg.ProduceRequest:
		d = b.quotas.Record(quota.ProducerByteRate, user, client, float64(req.Size), now)
	case *kmsg.FetchRequest:
		// Metered, and answered empty if throttled, before the response
		// was laid out (quota_fetch.go).
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			d = time.Duration(fr.ThrottleMillis) * time.Millisecond
		}
	}
	if requestTimeMetered(req.Header.APIKey) {
		pct := float64(now.Sub(start)) * 100 / float64(time.Second)
		d = max(d, b.quotas.Record(quota.RequestPercentage, user, client, pct, now))
	}
	if d <= 0 {
		return
	}
	delay := false
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		cur, after := tr.Throttle()
		if ms := throttleMillis(d); ms > cur {
			resp.(kmsg.SetThrottleResponse).SetThrottle(ms)
		}
		delay = !after
	}
	req.Throttle(d, delay)
}

// QuotaStats reports, per quota key, the responses throttled and the
// throttle time given (ms), for metrics.
func (b *Broker) QuotaStats() (keys []string, throttled, throttleMs []int64) {
	for k := range quota.NumKeys {
		n, ms := b.quotas.Stats(k)
		keys = append(keys, k.String())
		throttled = append(throttled, n)
		throttleMs = append(throttleMs, ms)
	}
	return keys, throttled, throttleMs
}

// QuotaEntities is the number of entities with a client quota.
func (b *Broker) QuotaEntities() int { return b.store.Quotas().Len() }
