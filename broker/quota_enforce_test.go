package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/quota"
)

// quotaBroker is a test broker holding 20 batches of 10 KiB in t/0, with
// the given quotas set on client ids.
func quotaBroker(t *testing.T, quotas map[string]quota.Values) *Broker {
	t.Helper()
	b := newTestBroker(t, nil)
	ctx := context.Background()
	for range 20 {
		data := batchtest.New(batchtest.NoProducer, []byte(strings.Repeat("x", 10<<10)))
		if _, err := b.store.Produce(ctx, time.Now().UnixMilli(), []raftstore.ProduceBatch{{Topic: "t", Partition: 0, Data: data}}); err != nil {
			t.Fatal(err)
		}
	}
	for client, v := range quotas {
		var ops []quota.Op
		for k, q := range v {
			if q != 0 {
				ops = append(ops, quota.Op{Key: quota.Key(k).String(), Value: q})
			}
		}
		if _, err := b.store.AlterQuotas(ctx, []quota.Alteration{{Entity: quota.Entity{ClientID: quota.Named(client)}, Ops: ops}}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

type fetchOpts struct {
	client    string
	replicaID int32
	version   int16
	sessionID int32
	epoch     int32
}

// fetchAs sends one Fetch of t/0 from offset 0 through Handle and returns
// the response, the record bytes it carries and the request.
func fetchAs(t *testing.T, b *Broker, o fetchOpts) (*kmsg.FetchResponse, int, *wire.Request) {
	t.Helper()
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID, r.MaxBytes, r.MaxWaitMillis, r.MinBytes = o.replicaID, 50<<20, 0, 1
	r.SessionID, r.SessionEpoch = o.sessionID, o.epoch
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, 10<<20
	rt.Partitions = append(rt.Partitions, rp)
	if o.epoch <= 0 {
		r.Topics = append(r.Topics, rt)
	}
	r.SetVersion(o.version)
	client := o.client
	req := &wire.Request{Header: wire.RequestHeader{APIKey: r.Key(), APIVersion: o.version, ClientID: &client}, Msg: r, Principal: wire.AnonymousPrincipal}
	resp, err := b.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	n := req.FileBytes()
	for _, ft := range fr.Topics {
		for _, fp := range ft.Partitions {
			n += len(fp.RecordBatches)
		}
	}
	return fr, n, req
}

// A Fetch that would take its client over consumer_byte_rate is answered
// empty, with its throttle time; the quota also caps what one Fetch may
// ask for. Before the fix, five back-to-back fetches each carried 200 KiB
// at a 1000 B/s quota.
func TestFetchQuotaThrottledEmpty(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"c": {quota.ConsumerByteRate: 1000}})
	var got int
	for i := range 5 {
		fr, n, req := fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: 12})
		got += n
		d, delayed := req.Throttled()
		t.Logf("fetch %d: %d record bytes, throttle_time_ms %d, throttle %v", i, n, fr.ThrottleMillis, d)
		if delayed {
			t.Errorf("fetch v12 (KIP-219) response delayed")
		}
		if i > 0 && (n != 0 || fr.ThrottleMillis == 0) {
			t.Errorf("fetch %d: %d bytes, throttle %d ms: want an empty throttled response", i, n, fr.ThrottleMillis)
		}
		if max := b.quotas.MaxThrottle(quota.ConsumerByteRate); d > max {
			t.Errorf("throttle %v above the %v cap", d, max)
		}
	}
	// The first fetch is capped at quota × (samples-1) windows: 10 000
	// bytes, plus at most one whole batch (Kafka returns the first batch
	// whatever its size).
	if got > 10000+11<<10 {
		t.Errorf("a 1000 B/s consumer got %d bytes in 5 back-to-back fetches", got)
	}
}

// The bytes of a throttled fetch are taken back off the rate: a client
// throttled by one oversized read is not throttled again for it.
func TestFetchQuotaUnrecords(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"c": {quota.ConsumerByteRate: 1 << 20}})
	now := time.Now()
	// Bring the client just under its quota: 10 MiB over the 10 s floor.
	b.quotas.Record(quota.ConsumerByteRate, "ANONYMOUS", "c", 10<<20-1000, now)
	fr, n, _ := fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: 12})
	if n != 0 || fr.ThrottleMillis == 0 {
		t.Fatalf("fetch over the quota: %d bytes, throttle %d ms", n, fr.ThrottleMillis)
	}
	// What is left is what was recorded before: 1000 bytes of room.
	if d := b.quotas.Record(quota.ConsumerByteRate, "ANONYMOUS", "c", 900, now); d != 0 {
		t.Errorf("the throttled fetch's bytes stayed on the rate: 900 more bytes throttle %v", d)
	}
}

// A throttled fetch in an incremental session leaves the session as it
// was: the next fetch answers the partition's records.
func TestFetchQuotaSession(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"c": {quota.ConsumerByteRate: 1 << 20}})
	fr, n, _ := fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: 12})
	if n == 0 || fr.SessionID == 0 {
		t.Fatalf("full fetch: %d bytes, session %d", n, fr.SessionID)
	}
	sid := fr.SessionID
	b.quotas.Record(quota.ConsumerByteRate, "ANONYMOUS", "c", 100<<20, time.Now())
	fr, n, _ = fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: 12, sessionID: sid, epoch: 1})
	if n != 0 || fr.ThrottleMillis == 0 || fr.SessionID != sid || fr.ErrorCode != 0 {
		t.Fatalf("throttled incremental fetch: %d bytes, throttle %d, session %d, error %d", n, fr.ThrottleMillis, fr.SessionID, fr.ErrorCode)
	}
	b.quotas.Unrecord(quota.ConsumerByteRate, "ANONYMOUS", "c", 100<<20, time.Now())
	fr, _, _ = fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: 12, sessionID: sid, epoch: 2})
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 {
		t.Fatalf("incremental fetch after the throttle: error %d, %d topics: the partition is not answered again", fr.ErrorCode, len(fr.Topics))
	}
}

// A Fetch that claims a replica id is metered as a consumer's: brokerd
// has no Kafka-protocol followers to exempt.
func TestFetchQuotaReplicaID(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"r": {quota.ConsumerByteRate: 1000}})
	var got int
	for range 5 {
		fr, n, _ := fetchAs(t, b, fetchOpts{client: "r", replicaID: 0, version: 10})
		got += n
		t.Logf("replica_id=0: %d bytes, throttle %d ms", n, fr.ThrottleMillis)
	}
	if got > 10000+11<<10 {
		t.Errorf("a client that says replica_id=0 fetched %d bytes against a 1000 B/s consumer quota", got)
	}
}

// A throttled response to a version before KIP-219 is delayed; a newer
// one is not.
func TestQuotaDelaysOldVersions(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"c": {quota.ConsumerByteRate: 1}})
	for _, c := range []struct {
		version int16
		delay   bool
	}{{7, true}, {8, false}} {
		b.quotas.Record(quota.ConsumerByteRate, "ANONYMOUS", "c", 1e6, time.Now())
		_, _, req := fetchAs(t, b, fetchOpts{client: "c", replicaID: -1, version: c.version})
		d, delayed := req.Throttled()
		if d <= 0 || delayed != c.delay {
			t.Errorf("fetch v%d: throttle %v, delayed %v, want delayed %v", c.version, d, delayed, c.delay)
		}
	}
}

// request_percentage meters the handler time of the requests it covers,
// and caps the throttle at one window.
func TestQuotaRequestPercentage(t *testing.T) {
	b := quotaBroker(t, map[string]quota.Values{"c": {quota.RequestPercentage: 0.01}})
	client := "c"
	r := kmsg.NewPtrListOffsetsRequest()
	req := &wire.Request{Header: wire.RequestHeader{APIKey: r.Key(), APIVersion: 4, ClientID: &client}, Msg: r, Principal: wire.AnonymousPrincipal}
	resp := r.ResponseKind()
	resp.SetVersion(4)
	b.enforceQuotas(req, resp, time.Now().Add(-time.Second))
	d, _ := req.Throttled()
	if d <= 0 || d > b.quotas.Window().Size {
		t.Errorf("a 1 s ListOffsets at 0.01%%: throttle %v, want within (0, %v]", d, b.quotas.Window().Size)
	}
	if got := resp.(*kmsg.ListOffsetsResponse).ThrottleMillis; got != throttleMillis(d) {
		t.Errorf("throttle_time_ms %d, want %d", got, throttleMillis(d))
	}
}

// The no-quota path of a Produce and of a Fetch's quota hooks: no
// allocation.
func BenchmarkEnforceQuotasNone(b *testing.B) {
	br := newTestBroker(b, nil)
	client := "c"
	r := kmsg.NewPtrProduceRequest()
	req := &wire.Request{Header: wire.RequestHeader{APIKey: r.Key(), APIVersion: 9, ClientID: &client}, Msg: r, Principal: wire.AnonymousPrincipal, Size: 1000}
	resp := r.ResponseKind()
	fr := kmsg.NewPtrFetchRequest()
	b.ReportAllocs()
	for b.Loop() {
		br.enforceQuotas(req, resp, time.Now())
		br.capFetchBytes(req, fr)
		_ = br.throttleFetch(req, nil, nil, nil)
	}
}
