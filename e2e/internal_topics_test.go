package e2e

import (
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTopic asks Metadata (no auto-creation) for one topic.
func metadataTopic(t testing.TB, cl *kgo.Client, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("metadata %s: %v", name, err)
	}
	return resp.Topics[0]
}

// TestFranzGoRegexSkipsInternal is franz-go's own TestConsumeRegex against
// brokerd: __consumer_offsets appears in Metadata marked internal after a
// FindCoordinator, and a regex consumer that matches it skips it.
func TestFranzGoRegexSkipsInternal(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	cl := newKgo(t, addr)
	ctx := testCtx(t, 60*time.Second)

	// franz-go's helper first tries kfake's is_internal config; a real
	// broker rejects it.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "pfx-internal", 1, 1
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "kfake.is_internal", Value: kmsg.StringPtr("true")}}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode == 0 {
		t.Fatalf("CreateTopics with kfake.is_internal: err %v, %+v", err, resp)
	}
	freq := kmsg.NewPtrFindCoordinatorRequest()
	freq.CoordinatorKey, freq.CoordinatorKeys = "pfx-internal", []string{"pfx-internal"}
	if _, err := freq.RequestWith(ctx, cl); err != nil {
		t.Fatalf("FindCoordinator: %v", err)
	}
	mt := metadataTopic(t, cl, "__consumer_offsets")
	if mt.ErrorCode != 0 || !mt.IsInternal || len(mt.Partitions) != 50 {
		t.Fatalf("__consumer_offsets in Metadata: error %d internal %v partitions %d", mt.ErrorCode, mt.IsInternal, len(mt.Partitions))
	}

	for _, name := range []string{"pfx-include-1", "pfx-include-2", "pfx-exclude-1", "pfx-exclude-2"} {
		createTopic(t, adm, name, 1, nil)
	}
	cons := newKgo(t, addr,
		kgo.ConsumeTopics("pfx-.*", regexp.QuoteMeta("__consumer_offsets")),
		kgo.ConsumeExcludeTopics("pfx-exclude-.*"),
		kgo.ConsumeRegex(),
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		cons.ForceMetadataRefresh()
		topics := cons.GetConsumeTopics()
		slices.Sort(topics)
		if slices.Equal(topics, []string{"pfx-include-1", "pfx-include-2"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("regex consumer consumes %v, want the two pfx-include topics", topics)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Listings: kadm hides internal topics unless asked.
	all, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	if d, ok := all["__consumer_offsets"]; !ok || !d.IsInternal {
		t.Fatalf("ListTopicsWithInternal lacks __consumer_offsets: %v", all.Names())
	}
	plain, _ := adm.ListTopics(ctx)
	if plain.Has("__consumer_offsets") {
		t.Fatal("ListTopics shows an internal topic")
	}
}

// TestInternalTopicsRefuseWrites: produce, delete, create, add partitions,
// alter configs and delete records are refused as Kafka refuses them;
// ListOffsets, Fetch and DescribeConfigs answer for an empty compacted log;
// and __transaction_state appears once a transaction has run.
func TestInternalTopicsRefuseWrites(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	cl := newKgo(t, addr, kgo.RecordRetries(1))
	ctx := testCtx(t, 60*time.Second)

	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	dr, err := adm.DeleteTopics(ctx, "__consumer_offsets")
	if err != nil || !errors.Is(dr["__consumer_offsets"].Err, kerr.InvalidTopicException) {
		t.Fatalf("delete __consumer_offsets: %v %v", err, dr["__consumer_offsets"].Err)
	}
	cr, err := adm.CreateTopic(ctx, 1, 1, nil, "__consumer_offsets")
	if !errors.Is(err, kerr.TopicAlreadyExists) && !errors.Is(cr.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("create __consumer_offsets: %v %v", err, cr.Err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "__transaction_state"); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("create __transaction_state before any transaction: %v", err)
	}
	pr, err := adm.CreatePartitions(ctx, 5, "__consumer_offsets")
	if err != nil || !errors.Is(pr["__consumer_offsets"].Err, kerr.InvalidTopicException) {
		t.Fatalf("create partitions on __consumer_offsets: %v %v", err, pr["__consumer_offsets"].Err)
	}
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "__consumer_offsets")
	if err != nil || !errors.Is(ar[0].Err, kerr.InvalidTopicException) {
		t.Fatalf("alter configs of __consumer_offsets: %v %v", err, ar)
	}
	// A group may commit offsets for its partitions, as monitoring tools
	// that consume it do.
	oc := kadm.Offsets{}
	oc.Add(kadm.Offset{Topic: "__consumer_offsets", Partition: 3, At: 0, LeaderEpoch: -1})
	cr2, err := adm.CommitOffsets(ctx, "int-monitor", oc)
	if err != nil || cr2.Error() != nil {
		t.Fatalf("commit an offset of __consumer_offsets: %v %v", err, cr2.Error())
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "__consumer_offsets", Partition: 0, At: 0})
	rr, err := adm.DeleteRecords(ctx, del)
	if err != nil || !errors.Is(rr["__consumer_offsets"][0].Err, kerr.InvalidTopicException) {
		t.Fatalf("delete records of __consumer_offsets: %v %v", err, rr)
	}

	ends := endOffsets(t, adm, "__consumer_offsets")
	starts := startOffsets(t, adm, "__consumer_offsets")
	if len(ends) != 50 || ends[7] != 0 || starts[49] != 0 {
		t.Fatalf("ListOffsets on __consumer_offsets: ends %v starts %v", ends, starts)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil || rc[0].Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc)
	}
	var policy string
	for _, c := range rc[0].Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Fatalf("__consumer_offsets cleanup.policy = %q", policy)
	}
	// A consumer assigned a partition of it reads an empty log.
	cons := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": {3: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100*time.Millisecond))
	pctx := testCtx(t, time.Second)
	fs := cons.PollFetches(pctx)
	fs.EachError(func(tp string, p int32, err error) {
		// The poll's own deadline comes back as an error of no topic.
		if tp != "" {
			t.Fatalf("fetch %s/%d: %v", tp, p, err)
		}
	})
	if recs := fs.Records(); len(recs) != 0 {
		t.Fatalf("read %d records from an empty internal topic", len(recs))
	}

	if _, ok := listWithInternal(t, adm)["__transaction_state"]; ok {
		t.Fatal("__transaction_state shown before any transaction")
	}
	createTopic(t, adm, "int-txn", 1, nil)
	txn := newKgo(t, addr, kgo.TransactionalID("int-txn"), kgo.DefaultProduceTopic("int-txn"))
	produceTxn(t, txn, "int-txn", "v", 1, true)
	// A new client: franz-go answers Metadata from its cache for a while.
	if d, ok := listWithInternal(t, newAdmin(t, addr))["__transaction_state"]; !ok || !d.IsInternal {
		t.Fatal("__transaction_state not shown after a transaction")
	}
	// Metadata requests that allow auto-creation never create them.
	mt := metadataTopic(t, newKgo(t, addr), "__transaction_state")
	if mt.ErrorCode != 0 || !mt.IsInternal {
		t.Fatalf("__transaction_state: %+v", mt)
	}
	if _, ok := n.Store().Topic("__consumer_offsets"); ok {
		t.Fatal("__consumer_offsets became an ordinary topic")
	}
}

func listWithInternal(t testing.TB, adm *kadm.Client) kadm.TopicDetails {
	t.Helper()
	d, err := adm.ListTopicsWithInternal(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	return d
}

// TestKafkaGoDeleteTopics is kafka-go's testDeleteTopics: after
// Conn.DeleteTopics, Conn.ReadPartitions (Metadata v1, which allows
// auto-creation) must not bring the topics back. An explicit create of the
// same name works at once, and auto-creation works again after the
// quarantine.
func TestKafkaGoDeleteTopics(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	// As kafka-go's suite does: a connection to the leader of a topic of
	// its own (which Metadata auto-creates), so that ReadPartitions
	// reports other topics' errors as "no partitions".
	conn, err := kafka.DialLeader(testCtx(t, 10*time.Second), "tcp", addr, "del-conn", 0)
	if err != nil {
		t.Fatalf("dial leader: %v", err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "del-1", NumPartitions: 2, ReplicationFactor: 1}, kafka.TopicConfig{Topic: "del-2", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := conn.DeleteTopics("del-1", "del-2"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	parts, err := conn.ReadPartitions("del-1", "del-2")
	if err != nil {
		t.Fatalf("ReadPartitions: %v", err)
	}
	if len(parts) != 0 {
		t.Fatalf("deleted topics came back: %v", parts)
	}
	if _, ok := n.Store().Topic("del-1"); ok {
		t.Fatal("Metadata re-created a topic just deleted")
	}
	// Explicit CreateTopics of a just-deleted name works.
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "del-2", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("re-create del-2: %v", err)
	}
	// Auto-creation comes back once the quarantine is over.
	deadline := time.Now().Add(10 * time.Second)
	for {
		parts, err = conn.ReadPartitions("del-1", "del-conn")
		if err == nil && len(parts) == 2 && parts[0].Topic != parts[1].Topic {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("del-1 not auto-created after the quarantine: %v %v", parts, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestLegacyInternalTopic: an ordinary topic named __consumer_offsets, as
// an older brokerd auto-created it, is neither listed twice nor stuck:
// Metadata shows only the internal one and DeleteTopics removes the old.
func TestLegacyInternalTopic(t *testing.T) {
	n := startNode(t)
	if err := n.Store().CreateTopic(testCtx(t, 10*time.Second), "__consumer_offsets", [16]byte{1}, 1, nil); err != nil {
		t.Fatal(err)
	}
	adm := newAdmin(t, n.KafkaAddr())
	all := listWithInternal(t, adm)
	if d := all["__consumer_offsets"]; len(d.Partitions) != 50 {
		t.Fatalf("__consumer_offsets has %d partitions in Metadata, want the internal topic's 50", len(d.Partitions))
	}
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), newKgo(t, n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == "__consumer_offsets" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("__consumer_offsets listed %d times", count)
	}
	dr, err := adm.DeleteTopics(testCtx(t, 10*time.Second), "__consumer_offsets")
	if err != nil || dr["__consumer_offsets"].Err != nil {
		t.Fatalf("delete the legacy topic: %v %v", err, dr["__consumer_offsets"].Err)
	}
	if _, ok := n.Store().Topic("__consumer_offsets"); ok {
		t.Fatal("legacy topic still in the store")
	}
}
