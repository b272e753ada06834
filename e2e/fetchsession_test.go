package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/batchtest"
)

// TestKafkaGoClientFetch reads through kafka-go's Client.Fetch, which sends
// a sessionless full fetch (SessionID -1, SessionEpoch -1). It used to get
// FETCH_SESSION_ID_NOT_FOUND and report "topic not found".
func TestKafkaGoClientFetch(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "kgo-client-fetch", 1, nil)
	cl := newKgo(t, addr)
	ctx := testCtx(t, 30*time.Second)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kgo-client-fetch", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	kc := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: newKafkaGoTransport(t)}
	resp, err := kc.Fetch(ctx, &kafka.FetchRequest{Topic: "kgo-client-fetch", Partition: 0, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("kafka-go Client.Fetch: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("kafka-go Client.Fetch: partition error %v", resp.Error)
	}
	if resp.HighWatermark != 10 {
		t.Fatalf("high watermark %d, want 10", resp.HighWatermark)
	}
	var got []string
	for {
		r, err := resp.Records.ReadRecord()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read record: %v", err)
		}
		v, _ := io.ReadAll(r.Value)
		got = append(got, string(v))
	}
	if len(got) != 10 || got[0] != "0" || got[9] != "9" {
		t.Fatalf("kafka-go Client.Fetch read %v", got)
	}
}

// fetchPart is one partition of a raw Fetch request.
func fetchPart(p int32, off int64) kmsg.FetchRequestTopicPartition {
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
	return rp
}

func rawFetch(rc *rawConn, v int16, sid, epoch int32, topics []kmsg.FetchRequestTopic, forget []kmsg.FetchRequestForgottenTopic) *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 50, 1, 10<<20
	req.SessionID, req.SessionEpoch = sid, epoch
	req.Topics, req.ForgottenTopics = topics, forget
	return roundTrip(rc, req, v, kmsg.NewPtrFetchResponse())
}

// answered lists "topic/partition:records-bytes" for each partition in a
// response, in order.
func answered(resp *kmsg.FetchResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d:%d", t.Topic, p.Partition, len(p.RecordBatches)))
		}
	}
	return out
}

// TestFetchSessionsRaw walks an incremental fetch session (KIP-227) through
// the wire: a full fetch opens it; incremental fetches name only changed
// partitions and get only partitions with news; forgotten partitions leave;
// stale epochs, unknown sessions and a switch to topic IDs are refused.
func TestFetchSessionsRaw(t *testing.T) {
	n := startNode(t)
	rc := dialRaw(t, n.KafkaAddr())
	rawCreateTopic(t, rc, "sess", 3)
	produce := func(p int32) {
		resp := roundTrip(rc, produceReq("sess", p, -1, batchtest.New(batchtest.NoProducer, []byte("x"))), 7, kmsg.NewPtrProduceResponse())
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(c))
		}
	}
	produce(0)
	topic := func(parts ...kmsg.FetchRequestTopicPartition) []kmsg.FetchRequestTopic {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.Partitions = "sess", parts
		return []kmsg.FetchRequestTopic{rt}
	}

	// Full fetch, epoch 0: everything answered, a session handed out.
	resp := rawFetch(rc, 12, 0, 0, topic(fetchPart(0, 0), fetchPart(1, 0), fetchPart(2, 0)), nil)
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("full fetch: error %d session %d", resp.ErrorCode, resp.SessionID)
	}
	if got := answered(resp); len(got) != 3 || strings.HasSuffix(got[0], ":0") {
		t.Fatalf("full fetch answered %v", got)
	}
	sid := resp.SessionID

	// Epoch 1: partition 0 moved to offset 1 and nothing is new: nothing is
	// answered (after the long poll).
	resp = rawFetch(rc, 12, sid, 1, topic(fetchPart(0, 1)), nil)
	if resp.ErrorCode != 0 || resp.SessionID != sid || len(answered(resp)) != 0 {
		t.Fatalf("quiet incremental: error %d session %d answered %v", resp.ErrorCode, resp.SessionID, answered(resp))
	}

	// Epoch 2: a record lands on partition 2; only it is answered, at the
	// offset the session remembers (0).
	produce(2)
	resp = rawFetch(rc, 12, sid, 2, nil, nil)
	if got := answered(resp); len(got) != 1 || got[0][:7] != "sess/2:" || strings.HasSuffix(got[0], ":0") {
		t.Fatalf("incremental with news on partition 2 answered %v", got)
	}

	// A replayed epoch is refused.
	if resp = rawFetch(rc, 12, sid, 2, nil, nil); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch: error %d", resp.ErrorCode)
	}
	// Epoch 3: forget partition 2; a new record there is not answered.
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "sess", []int32{2}
	produce(2)
	if resp = rawFetch(rc, 12, sid, 3, nil, []kmsg.FetchRequestForgottenTopic{ft}); len(answered(resp)) != 0 {
		t.Fatalf("forgotten partition answered: %v", answered(resp))
	}
	// A v13 request in this name-keyed session is refused.
	if resp = rawFetch(rc, 13, sid, 4, nil, nil); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("topic-ID switch: error %d", resp.ErrorCode)
	}
	// An unknown session.
	if resp = rawFetch(rc, 12, sid+1, 1, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d", resp.ErrorCode)
	}
	// A full fetch with the final epoch closes the session.
	if resp = rawFetch(rc, 12, sid, -1, topic(fetchPart(0, 0)), nil); resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("final epoch: error %d session %d", resp.ErrorCode, resp.SessionID)
	}
	if resp = rawFetch(rc, 12, sid, 4, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d", resp.ErrorCode)
	}

	// A v13 session, keyed by topic ID.
	md := roundTrip(rc, kmsg.NewPtrMetadataRequest(), 12, kmsg.NewPtrMetadataResponse())
	var id [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == "sess" {
			id = mt.TopicID
		}
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID, rt.Partitions = id, []kmsg.FetchRequestTopicPartition{fetchPart(0, 1), fetchPart(1, 0)}
	resp = rawFetch(rc, 13, 0, 0, []kmsg.FetchRequestTopic{rt}, nil)
	if resp.ErrorCode != 0 || resp.SessionID == 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != id {
		t.Fatalf("v13 full fetch: %+v", resp)
	}
	sid = resp.SessionID
	produce(1)
	resp = rawFetch(rc, 13, sid, 1, nil, nil)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("v13 incremental: %+v", resp.Topics)
	}
}

// TestFranzGoFetchSessions consumes 200 partitions with franz-go, which
// uses fetch sessions by default, while producers keep writing, and checks
// that every record arrives once and that the consumer held a session.
func TestFranzGoFetchSessions(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	const parts = 200
	createTopic(t, newAdmin(t, addr), "sess-many", parts, nil)
	prod := newKgo(t, addr, kgo.DefaultProduceTopic("sess-many"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t, 60*time.Second)
	produce := func(round int, only func(p int32) bool) int {
		var recs []*kgo.Record
		for p := range int32(parts) {
			if only(p) {
				recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", round, p)})
			}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return len(recs)
	}
	want := produce(0, func(int32) bool { return true })
	cons := newKgo(t, addr, kgo.ConsumeTopics("sess-many"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int{}
	poll := func(total int) {
		for len(seen) < total {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d: %v", len(seen), total, err)
			}
			fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		}
	}
	poll(want)
	// Later rounds touch a few partitions each: incremental fetches.
	for round := 1; round <= 5; round++ {
		want += produce(round, func(p int32) bool { return p%37 == int32(round) })
		poll(want)
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("record %s consumed %d times", v, c)
		}
	}
	if len(seen) != want {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), want)
	}
	if s := metricValue(t, n.AdminAddr(), "brokerd_incremental_fetch_sessions"); s < 1 {
		t.Fatalf("brokerd_incremental_fetch_sessions = %v; franz-go should hold a session", s)
	}
	if p := metricValue(t, n.AdminAddr(), "brokerd_incremental_fetch_partitions_cached"); p < parts {
		t.Fatalf("brokerd_incremental_fetch_partitions_cached = %v, want >= %d", p, parts)
	}
}

// metricValue scrapes one unlabelled series from /metrics.
func metricValue(t testing.TB, admin, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not exported", name)
	return 0
}
