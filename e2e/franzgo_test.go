package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/batchtest"
)

// codecs are the compression codecs every client must be able to use.
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// expectedRecord builds the i-th record of partition p for a run named
// run: a mix of keys, null keys, null and empty values, and headers.
func expectedRecord(run string, p int32, i int) *kgo.Record {
	r := &kgo.Record{Partition: p}
	if i%17 != 5 {
		r.Key = []byte(fmt.Sprintf("%s-key-%d-%d", run, p, i))
	}
	switch {
	case i%23 == 7:
		r.Value = nil // a tombstone
	case i%29 == 3:
		r.Value = []byte{}
	default:
		// Compressible, and varied in size.
		r.Value = []byte(fmt.Sprintf("%s-value-%d-%d-%s", run, p, i, strings.Repeat("abcdefgh", i%40)))
	}
	r.Headers = []kgo.RecordHeader{
		{Key: "idx", Value: []byte(strconv.Itoa(i))},
		{Key: "run", Value: []byte(run)},
	}
	if i%3 == 0 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: "empty", Value: nil})
	}
	return r
}

func sameRecord(want, got *kgo.Record) error {
	if !bytes.Equal(want.Key, got.Key) || (want.Key == nil) != (got.Key == nil) {
		return fmt.Errorf("key %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.Key, want.Key == nil)
	}
	if !bytes.Equal(want.Value, got.Value) || (want.Value == nil) != (got.Value == nil) {
		return fmt.Errorf("value %.40q (nil %v), want %.40q (nil %v)", got.Value, got.Value == nil, want.Value, want.Value == nil)
	}
	if len(want.Headers) != len(got.Headers) {
		return fmt.Errorf("%d headers %v, want %d %v", len(got.Headers), got.Headers, len(want.Headers), want.Headers)
	}
	for i := range want.Headers {
		if want.Headers[i].Key != got.Headers[i].Key || !bytes.Equal(want.Headers[i].Value, got.Headers[i].Value) {
			return fmt.Errorf("header %d is %q=%q, want %q=%q", i, got.Headers[i].Key, got.Headers[i].Value, want.Headers[i].Key, want.Headers[i].Value)
		}
	}
	return nil
}

// TestFranzGoProduceConsumeCodecs produces with every compression codec,
// idempotent with acks=all, and reads everything back without a group.
func TestFranzGoProduceConsumeCodecs(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const partitions = 3
	const perPartition = 120
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			createTopic(t, adm, topic, partitions, nil)
			prod := newKgo(t, n.KafkaAddr(),
				kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is on by default
				kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(5*time.Millisecond),
				kgo.WithLogger(kgoLogger{n.logs}),
			)
			var want []*kgo.Record
			for i := 0; i < perPartition; i++ {
				for p := int32(0); p < partitions; p++ {
					want = append(want, expectedRecord(c.name, p, i))
				}
			}
			// Copies go to the producer: it fills in offsets.
			send := make([]*kgo.Record, len(want))
			for i, r := range want {
				cp := *r
				send[i] = &cp
			}
			ctx := testCtx(t, 30*time.Second)
			res := prod.ProduceSync(ctx, send...)
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce %d records with %s (idempotent, acks=all): %v", len(send), c.name, err)
			}
			next := map[int32]int64{}
			for _, r := range res {
				if r.Record.Offset != next[r.Record.Partition] {
					t.Fatalf("produce ack: partition %d record got offset %d, want %d (offsets must be dense and in order)",
						r.Record.Partition, r.Record.Offset, next[r.Record.Partition])
				}
				next[r.Record.Partition]++
			}

			got := consumeUntil(t, n.KafkaAddr(), topic, atStart(partitions), len(want), 20*time.Second)
			for p := int32(0); p < partitions; p++ {
				var wp []*kgo.Record
				for _, r := range want {
					if r.Partition == p {
						wp = append(wp, r)
					}
				}
				gp := got[p]
				if len(gp) != len(wp) {
					t.Errorf("partition %d: consumed %d records, want exactly %d", p, len(gp), len(wp))
				}
				for i := 0; i < min(len(gp), len(wp)); i++ {
					if gp[i].Offset != int64(i) {
						t.Fatalf("partition %d: record %d has offset %d, want %d", p, i, gp[i].Offset, i)
					}
					if err := sameRecord(wp[i], gp[i]); err != nil {
						t.Fatalf("partition %d offset %d: %v", p, i, err)
					}
				}
			}
			ends := endOffsets(t, adm, topic)
			starts := startOffsets(t, adm, topic)
			for p := int32(0); p < partitions; p++ {
				if ends[p] != perPartition || starts[p] != 0 {
					t.Errorf("partition %d: start %d end %d, want 0 and %d", p, starts[p], ends[p], perPartition)
				}
			}
		})
	}
}

// TestFranzGoFetchPaging reads many batches through small fetch limits, so
// that the broker must split responses at batch boundaries and always return
// at least one whole batch (KIP-74).
func TestFranzGoFetchPaging(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "paging"
	createTopic(t, adm, topic, 1, nil)
	prod := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(2*time.Millisecond))
	const total = 3000
	recs := make([]*kgo.Record, total)
	big := bytes.Repeat([]byte("x"), 20<<10)
	for i := range recs {
		v := []byte(strconv.Itoa(i))
		if i%500 == 250 {
			// A batch larger than the fetch limits below.
			v = append(v, big...)
		}
		recs[i] = &kgo.Record{Value: v}
	}
	if err := prod.ProduceSync(testCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl := newKgo(t, n.KafkaAddr(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(4<<10), kgo.FetchMaxPartitionBytes(2<<10), kgo.FetchMaxWait(100*time.Millisecond))
	ctx := testCtx(t, 30*time.Second)
	nextOff := int64(0)
	for nextOff < total && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch partition %d at offset %d with 4 KiB limits: %v", p, nextOff, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != nextOff {
				t.Fatalf("got offset %d, want %d", r.Offset, nextOff)
			}
			if !bytes.HasPrefix(r.Value, []byte(strconv.Itoa(int(r.Offset)))) {
				t.Fatalf("offset %d has value %.20q", r.Offset, r.Value)
			}
			nextOff++
		})
	}
	if nextOff != total {
		t.Fatalf("read %d of %d records with small fetch limits before the deadline", nextOff, total)
	}
}

// TestFranzGoListOffsets checks start, end, by-time and max-timestamp
// offsets.
func TestFranzGoListOffsets(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "offsets"
	createTopic(t, adm, topic, 3, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	// Partition 0: one record per batch. Partition 1: all ten in one batch
	// (a long linger), so a by-time lookup must look inside the batch.
	one := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	batched := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(200*time.Millisecond))
	ctx := testCtx(t, 30*time.Second)
	var batch []*kgo.Record
	for i := 0; i < 10; i++ {
		ts := base.Add(time.Duration(i) * time.Second)
		if err := one.ProduceSync(ctx, &kgo.Record{Partition: 0, Timestamp: ts, Value: []byte("p0-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce to partition 0: %v", err)
		}
		batch = append(batch, &kgo.Record{Partition: 1, Timestamp: ts, Value: []byte("p1-" + strconv.Itoa(i))})
	}
	res := batched.ProduceSync(ctx, batch...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to partition 1: %v", err)
	}

	ends := endOffsets(t, adm, topic)
	if ends[0] != 10 || ends[1] != 10 || ends[2] != 0 {
		t.Errorf("ListEndOffsets = %v, want 0:10 1:10 2:0", ends)
	}
	starts := startOffsets(t, adm, topic)
	if starts[0] != 0 || starts[1] != 0 || starts[2] != 0 {
		t.Errorf("ListStartOffsets = %v, want all 0", starts)
	}

	// 5.5 s after base: the first record at or after it is index 6.
	after, err := adm.ListOffsetsAfterMilli(ctx, base.Add(5500*time.Millisecond).UnixMilli(), topic)
	if err != nil || after.Error() != nil {
		t.Fatalf("ListOffsetsAfterMilli: %v / %v", err, after.Error())
	}
	for _, p := range []int32{0, 1} {
		o, _ := after.Lookup(topic, p)
		if o.Offset != 6 || o.Timestamp != base.Add(6*time.Second).UnixMilli() {
			t.Errorf("ListOffsets(timestamp=base+5.5s) partition %d = offset %d timestamp %d, want offset 6 timestamp %d",
				p, o.Offset, o.Timestamp, base.Add(6*time.Second).UnixMilli())
		}
	}
	// Exactly on a record's timestamp.
	exact, err := adm.ListOffsetsAfterMilli(ctx, base.Add(3*time.Second).UnixMilli(), topic)
	if err != nil {
		t.Fatalf("ListOffsetsAfterMilli: %v", err)
	}
	for _, p := range []int32{0, 1} {
		if o, _ := exact.Lookup(topic, p); o.Offset != 3 {
			t.Errorf("ListOffsets(timestamp=base+3s) partition %d = offset %d, want 3", p, o.Offset)
		}
	}
	// Before everything: offset 0.
	early, err := adm.ListOffsetsAfterMilli(ctx, base.Add(-time.Hour).UnixMilli(), topic)
	if err != nil {
		t.Fatalf("ListOffsetsAfterMilli: %v", err)
	}
	for _, p := range []int32{0, 1} {
		if o, _ := early.Lookup(topic, p); o.Offset != 0 {
			t.Errorf("ListOffsets(timestamp before all records) partition %d = offset %d, want 0", p, o.Offset)
		}
	}

	// After everything the raw answer is -1 (kadm then lists the end).
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = base.Add(time.Hour).UnixMilli()
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	kresp, err := req.RequestWith(ctx, one)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	for _, rp := range kresp.Topics[0].Partitions {
		if rp.ErrorCode != 0 || rp.Offset != -1 || rp.Timestamp != -1 {
			t.Errorf("ListOffsets v%d (timestamp after every record) partition %d = error %d offset %d timestamp %d, want error 0 offset -1 timestamp -1",
				req.Version, rp.Partition, rp.ErrorCode, rp.Offset, rp.Timestamp)
		}
	}
	late, err := adm.ListOffsetsAfterMilli(ctx, base.Add(time.Hour).UnixMilli(), topic)
	if err != nil {
		t.Fatalf("ListOffsetsAfterMilli: %v", err)
	}
	for p, want := range map[int32]int64{0: 10, 1: 10, 2: 0} {
		if o, _ := late.Lookup(topic, p); o.Offset != want {
			t.Errorf("kadm ListOffsetsAfterMilli(after all) partition %d = %d, want end offset %d", p, o.Offset, want)
		}
	}

	maxTS, err := adm.ListMaxTimestampOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListMaxTimestampOffsets: %v", err)
	}
	for _, p := range []int32{0, 1} {
		o, _ := maxTS.Lookup(topic, p)
		if o.Err != nil || o.Offset != 9 || o.Timestamp != base.Add(9*time.Second).UnixMilli() {
			t.Errorf("ListOffsets(-3, max timestamp) partition %d = offset %d timestamp %d err %v, want offset 9 timestamp %d",
				p, o.Offset, o.Timestamp, o.Err, base.Add(9*time.Second).UnixMilli())
		}
	}
	if o, _ := maxTS.Lookup(topic, 2); o.Err != nil || o.Offset != -1 {
		t.Errorf("ListOffsets(-3) on an empty partition = offset %d err %v, want -1 and no error", o.Offset, o.Err)
	}

	// An unknown partition (on a raw connection: kgo would refuse to
	// send a request for a partition metadata does not list).
	rc := dialRaw(t, n.KafkaAddr())
	req2 := kmsg.NewPtrListOffsetsRequest()
	rt2 := kmsg.NewListOffsetsRequestTopic()
	rt2.Topic = topic
	rp2 := kmsg.NewListOffsetsRequestTopicPartition()
	rp2.Partition = 7
	rp2.Timestamp = -1
	rt2.Partitions = append(rt2.Partitions, rp2)
	req2.Topics = append(req2.Topics, rt2)
	r2 := roundTrip(rc, req2, 8, kmsg.NewPtrListOffsetsResponse())
	if code := r2.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("ListOffsets for partition 7 of a 3-partition topic: error %d, want %d (UNKNOWN_TOPIC_OR_PARTITION)", code, kerr.UnknownTopicOrPartition.Code)
	}
}

func configValue(t *testing.T, adm *kadm.Client, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t, 20*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %q: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %q: %v / %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("DescribeTopicConfigs %q: no %s among %d configs", topic, key, len(rc.Configs))
	return "", 0
}

// TestFranzGoTopicConfigs covers DescribeConfigs, IncrementalAlterConfigs
// and AlterConfigs.
func TestFranzGoTopicConfigs(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "configs"
	createTopic(t, adm, topic, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")})

	if v, src := configValue(t, adm, topic, "retention.ms"); v != "3600000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms set at create = %q (source %v), want 3600000 (DYNAMIC_TOPIC_CONFIG)", v, src)
	}
	if v, src := configValue(t, adm, topic, "cleanup.policy"); v != "delete" || src == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("cleanup.policy default = %q (source %v), want delete from a default source", v, src)
	}
	configValue(t, adm, topic, "max.message.bytes")
	configValue(t, adm, topic, "segment.bytes")

	ctx := testCtx(t, 30*time.Second)
	// Incremental: set two, then delete one.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, topic)
	if err != nil || resp[0].Err != nil {
		t.Fatalf("IncrementalAlterConfigs set: %v / %v", err, resp)
	}
	if v, _ := configValue(t, adm, topic, "retention.ms"); v != "7200000" {
		t.Errorf("after IncrementalAlterConfigs SET retention.ms=7200000: %q", v)
	}
	if v, _ := configValue(t, adm, topic, "cleanup.policy"); v != "compact" {
		t.Errorf("after IncrementalAlterConfigs SET cleanup.policy=compact: %q", v)
	}
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
	if err != nil || resp[0].Err != nil {
		t.Fatalf("IncrementalAlterConfigs delete: %v / %v", err, resp)
	}
	if v, src := configValue(t, adm, topic, "retention.ms"); v != "604800000" || src == kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("after IncrementalAlterConfigs DELETE retention.ms: %q (source %v), want the default 604800000", v, src)
	}
	if v, _ := configValue(t, adm, topic, "cleanup.policy"); v != "compact" {
		t.Errorf("deleting retention.ms changed cleanup.policy to %q", v)
	}

	// Legacy AlterConfigs replaces the whole set of topic overrides.
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("60000")}}, topic)
	if err != nil || resp[0].Err != nil {
		t.Fatalf("AlterConfigs: %v / %v", err, resp)
	}
	if v, _ := configValue(t, adm, topic, "segment.ms"); v != "60000" {
		t.Errorf("after AlterConfigs segment.ms=60000: %q", v)
	}
	if v, _ := configValue(t, adm, topic, "cleanup.policy"); v != "delete" {
		t.Errorf("AlterConfigs (non-incremental) must reset overrides it does not name: cleanup.policy = %q, want delete", v)
	}

	// Bad values and names.
	for _, bad := range []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("not-a-number")},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("sometimes")},
		{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")},
	} {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{bad}, topic)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs %s=%s: %v", bad.Name, *bad.Value, err)
		}
		if !errors.Is(resp[0].Err, kerr.InvalidConfig) {
			t.Errorf("IncrementalAlterConfigs %s=%s: error %v, want INVALID_CONFIG", bad.Name, *bad.Value, resp[0].Err)
		}
	}
	if v, _ := configValue(t, adm, topic, "segment.ms"); v != "60000" {
		t.Errorf("a rejected alter changed segment.ms to %q", v)
	}

	// Unknown topic.
	rcs, err := adm.DescribeTopicConfigs(ctx, "no-such-topic")
	if err == nil {
		if len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("DescribeConfigs of an unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", rcs)
		}
	}
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "no-such-topic")
	if err == nil && !errors.Is(resp[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("IncrementalAlterConfigs of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", resp[0].Err)
	}
}

// TestFranzGoAdmin covers CreatePartitions, DeleteRecords, DeleteTopics,
// DescribeLogDirs and create-time errors.
func TestFranzGoAdmin(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	ctx := testCtx(t, 60*time.Second)
	prod := newKgo(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	t.Run("CreateTopicErrors", func(t *testing.T) {
		createTopic(t, adm, "dup", 1, nil)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "dup"); !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Errorf("CreateTopics of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
		}
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "bad name!"); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("CreateTopics %q: %v, want INVALID_TOPIC_EXCEPTION", "bad name!", err)
		}
		if _, err := adm.CreateTopic(ctx, 0, 1, nil, "zero-parts"); !errors.Is(err, kerr.InvalidPartitions) {
			t.Errorf("CreateTopics with 0 partitions: %v, want INVALID_PARTITIONS", err)
		}
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, "rf3"); !errors.Is(err, kerr.InvalidReplicationFactor) {
			t.Errorf("CreateTopics with replication factor 3 on one node: %v, want INVALID_REPLICATION_FACTOR", err)
		}
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, "badcfg"); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("CreateTopics with retention.ms=soon: %v, want INVALID_CONFIG", err)
		}
		// Broker defaults (-1, -1), v4+.
		resp, err := adm.CreateTopic(ctx, -1, -1, nil, "defaults")
		if err != nil || resp.NumPartitions != 1 || resp.ReplicationFactor != 1 {
			t.Errorf("CreateTopics with -1/-1: %+v %v, want 1 partition, replication factor 1", resp, err)
		}
		// ValidateOnly creates nothing.
		if _, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "validate-only"); err != nil {
			t.Errorf("CreateTopics validate-only: %v", err)
		}
		tds, err := adm.ListTopics(ctx, "validate-only")
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		if td, ok := tds["validate-only"]; ok && td.Err == nil {
			t.Errorf("CreateTopics with validate_only=true created the topic: %+v", td)
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		const topic = "grow"
		createTopic(t, adm, topic, 3, nil)
		resp, err := adm.CreatePartitions(ctx, 2, topic)
		if err != nil || resp[topic].Err != nil {
			t.Fatalf("CreatePartitions +2: %v / %+v", err, resp)
		}
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		if got := len(tds[topic].Partitions); got != 5 {
			t.Fatalf("after CreatePartitions 3+2, metadata shows %d partitions", got)
		}
		r := &kgo.Record{Topic: topic, Partition: 4, Value: []byte("in the new partition")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to new partition 4: %v", err)
		}
		got := consumeUntil(t, n.KafkaAddr(), topic, map[int32]kgo.Offset{4: kgo.NewOffset().AtStart()}, 1, 10*time.Second)
		if len(got[4]) != 1 || string(got[4][0].Value) != "in the new partition" {
			t.Errorf("read back from partition 4: %v", got[4])
		}
		resp, err = adm.UpdatePartitions(ctx, 2, topic)
		if err == nil && !errors.Is(resp[topic].Err, kerr.InvalidPartitions) {
			t.Errorf("CreatePartitions count=2 on 5 partitions: %v, want INVALID_PARTITIONS", resp[topic].Err)
		}
		resp, err = adm.CreatePartitions(ctx, 1, "no-such-topic")
		if err == nil && !errors.Is(resp["no-such-topic"].Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("CreatePartitions on an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", resp["no-such-topic"].Err)
		}
	})

	t.Run("DeleteRecords", func(t *testing.T) {
		const topic = "trim"
		createTopic(t, adm, topic, 1, nil)
		var recs []*kgo.Record
		for i := 0; i < 20; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5})
		resp, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatalf("DeleteRecords before 5: %v", err)
		}
		if r, _ := resp.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 5 {
			t.Fatalf("DeleteRecords before 5: low watermark %d err %v, want 5", r.LowWatermark, r.Err)
		}
		if s := startOffsets(t, adm, topic); s[0] != 5 {
			t.Errorf("ListStartOffsets after DeleteRecords(5) = %d, want 5", s[0])
		}
		got := consumeUntil(t, n.KafkaAddr(), topic, atStart(1), 15, 10*time.Second)
		if len(got[0]) != 15 || got[0][0].Offset != 5 || string(got[0][0].Value) != "5" {
			first := int64(-1)
			if len(got[0]) > 0 {
				first = got[0][0].Offset
			}
			t.Errorf("consume from start after DeleteRecords(5): %d records, first offset %d, want 15 from offset 5", len(got[0]), first)
		}
		// Fetching below the start is OFFSET_OUT_OF_RANGE.
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 10
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		ft.TopicID = tds[topic].ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 2, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		fresp, err := req.RequestWith(ctx, prod)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v%d response shape: %+v", req.Version, fresp)
		}
		if c := fresp.Topics[0].Partitions[0].ErrorCode; c != kerr.OffsetOutOfRange.Code {
			t.Errorf("Fetch v%d at offset 2 below log start 5: error %d, want %d (OFFSET_OUT_OF_RANGE)", req.Version, c, kerr.OffsetOutOfRange.Code)
		}

		os = nil
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: -1}) // the high watermark
		resp, err = adm.DeleteRecords(ctx, os)
		if r, _ := resp.Lookup(topic, 0); err != nil || r.Err != nil || r.LowWatermark != 20 {
			t.Errorf("DeleteRecords to the high watermark (-1): low watermark %d err %v/%v, want 20", r.LowWatermark, err, r.Err)
		}
		os = nil
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 25})
		resp, err = adm.DeleteRecords(ctx, os)
		if r, _ := resp.Lookup(topic, 0); err == nil && !errors.Is(r.Err, kerr.OffsetOutOfRange) {
			t.Errorf("DeleteRecords beyond the end (25 > 20): %v, want OFFSET_OUT_OF_RANGE", r.Err)
		}
		// The log keeps going from 20.
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("20")}).FirstErr(); err != nil {
			t.Fatalf("produce after trimming everything: %v", err)
		}
		if e := endOffsets(t, adm, topic); e[0] != 21 {
			t.Errorf("end offset after trimming everything and producing one = %d, want 21", e[0])
		}
	})

	t.Run("DeleteTopics", func(t *testing.T) {
		const topic = "doomed"
		createTopic(t, adm, topic, 2, nil)
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		resp, err := adm.DeleteTopics(ctx, topic)
		if err != nil || resp[topic].Err != nil {
			t.Fatalf("DeleteTopics: %v / %+v", err, resp)
		}
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		if tds.Has(topic) {
			t.Errorf("topic %q still listed after DeleteTopics", topic)
		}
		resp, err = adm.DeleteTopics(ctx, topic)
		if err == nil && !errors.Is(resp[topic].Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("deleting a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", resp[topic].Err)
		}
		// The name can be reused, and the new topic starts empty.
		createTopic(t, adm, topic, 2, nil)
		if e := endOffsets(t, adm, topic); e[0] != 0 || e[1] != 0 {
			t.Errorf("recreated topic has end offsets %v, want all 0 (old data leaked)", e)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("new")}).FirstErr(); err != nil {
			t.Fatalf("produce to the recreated topic: %v", err)
		}
		got := consumeUntil(t, n.KafkaAddr(), topic, map[int32]kgo.Offset{1: kgo.NewOffset().AtStart()}, 1, 10*time.Second)
		if len(got[1]) != 1 || string(got[1][0].Value) != "new" || got[1][0].Offset != 0 {
			t.Errorf("recreated topic partition 1 holds %d records (first %v), want just \"new\" at 0", len(got[1]), got[1])
		}
	})

	t.Run("DescribeLogDirs", func(t *testing.T) {
		const topic = "sized"
		createTopic(t, adm, topic, 2, nil)
		incompressible := make([]byte, 1000)
		rand.Read(incompressible)
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: incompressible}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatalf("DescribeLogDirs: %v", err)
		}
		if len(all) != 1 {
			t.Fatalf("DescribeLogDirs: %d brokers, want 1: %+v", len(all), all)
		}
		found := false
		all.Each(func(d kadm.DescribedLogDir) {
			if d.Err != nil {
				t.Errorf("log dir %s: %v", d.Dir, d.Err)
			}
			if p, ok := d.Topics.Lookup(topic, 0); ok {
				found = true
				if p.Size < 1000 {
					t.Errorf("DescribeLogDirs: %s-0 size %d, want >= 1000 after a 1000-byte record", topic, p.Size)
				}
			}
			if _, ok := d.Topics.Lookup(topic, 1); !ok {
				t.Errorf("DescribeLogDirs: %s-1 (empty) missing from dir %s", topic, d.Dir)
			}
		})
		if !found {
			t.Errorf("DescribeLogDirs: %s-0 not reported: %+v", topic, all)
		}
	})
}

// TestFranzGoProduceErrors checks the error codes a producer sees.
func TestFranzGoProduceErrors(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	ctx := testCtx(t, 60*time.Second)

	t.Run("InvalidTopicName", func(t *testing.T) {
		cl := newKgo(t, n.KafkaAddr(), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(10*time.Second))
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bad topic", Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("kgo produce to %q: %v, want INVALID_TOPIC_EXCEPTION", "bad topic", err)
		}
		// The Produce request itself, for names the client might not
		// check: each must be answered with INVALID_TOPIC_EXCEPTION (17).
		for _, name := range []string{"bad topic", "a/b", "..", ".", strings.Repeat("x", 250), "tab\there", ""} {
			req := kmsg.NewPtrProduceRequest()
			req.Acks = -1
			req.TimeoutMillis = 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = name
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = 0
			rp.Records = buildBatch(simpleRecords("bad", 1), batchOpts{FirstTimestamp: time.Now().UnixMilli()})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Errorf("Produce to %q: request failed: %v", name, err)
				continue
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Errorf("Produce to %q: response shape %+v", name, resp)
				continue
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
				t.Errorf("Produce v%d to topic %q: error %d (%v), want %d (INVALID_TOPIC_EXCEPTION)",
					req.Version, name, code, kerr.ErrorForCode(code), kerr.InvalidTopicException.Code)
			}
		}
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		for _, td := range tds {
			if strings.ContainsAny(td.Topic, " /\t") || td.Topic == "" || td.Topic == "." || td.Topic == ".." {
				t.Errorf("a topic with an invalid name exists: %q", td.Topic)
			}
		}
	})

	// Batches a client may not write, answered INVALID_RECORD (87) as
	// Kafka's LogValidator does, and appended nowhere.
	t.Run("InvalidRecord", func(t *testing.T) {
		const topic = "invalid-records"
		createTopic(t, adm, topic, 2, nil)
		cl := newKgo(t, n.KafkaAddr())
		control := batchtest.New(batchtest.NoProducer, []byte("x"))
		control[22] |= 0x20 // attributes: control batch
		control = batchtest.Seal(control)
		noSeq := batchtest.New(batchtest.Options{ProducerID: 7, ProducerEpoch: 0, BaseSequence: -1}, []byte("x"))
		ok := batchtest.New(batchtest.NoProducer, []byte("x"))
		for _, tc := range []struct {
			name  string
			parts []int32
			data  [][]byte
		}{
			{"control batch", []int32{0}, [][]byte{control}},
			{"idempotent batch without a sequence", []int32{0}, [][]byte{noSeq}},
			{"the same partition twice", []int32{1, 1}, [][]byte{ok, ok}},
		} {
			req := kmsg.NewPtrProduceRequest()
			req.Acks = -1
			req.TimeoutMillis = 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			for i, p := range tc.parts {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = p
				rp.Records = tc.data[i]
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != kerr.InvalidRecord.Code {
					t.Errorf("%s: partition %d answered %v, want INVALID_RECORD", tc.name, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		if ends := endOffsets(t, adm, topic); ends[0] != 0 || ends[1] != 0 {
			t.Fatalf("refused batches were appended: end offsets %v", ends)
		}
	})

	t.Run("MessageTooLarge", func(t *testing.T) {
		const topic = "small-messages"
		createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1024")})
		cl := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RecordDeliveryTimeout(10*time.Second))
		big := make([]byte, 4096)
		rand.Read(big)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Errorf("produce a 4 KiB record to a topic with max.message.bytes=1024: %v, want MESSAGE_TOO_LARGE", err)
		}
		if e := endOffsets(t, adm, topic); e[0] != 0 {
			t.Errorf("end offset after a rejected record = %d, want 0", e[0])
		}
		// A record under the limit still goes through (on a new client: the
		// failed idempotent sequence is the client's business).
		cl2 := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic))
		if err := cl2.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}).FirstErr(); err != nil {
			t.Errorf("produce a small record after MESSAGE_TOO_LARGE: %v", err)
		}
		if e := endOffsets(t, adm, topic); e[0] != 1 {
			t.Errorf("end offset after one small record = %d, want 1", e[0])
		}
		// Raising the limit lets the big record in.
		if resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("100000")}}, topic); err != nil || resp[0].Err != nil {
			t.Fatalf("raise max.message.bytes: %v %v", err, resp)
		}
		if err := cl2.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr(); err != nil {
			t.Errorf("produce 4 KiB after raising max.message.bytes to 100000: %v", err)
		}
	})

	t.Run("UnknownTopicNoAutoCreate", func(t *testing.T) {
		// Metadata v4+ with allow_auto_topic_creation=false must not create.
		cl := newKgo(t, n.KafkaAddr())
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("not-auto-created")
		req.Topics = append(req.Topics, mt)
		req.AllowAutoTopicCreation = false
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("Metadata: %v", err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("Metadata v%d for an unknown topic without auto-create: %+v, want UNKNOWN_TOPIC_OR_PARTITION", req.Version, resp.Topics)
		}
		// With it allowed (and the broker default auto.create.topics.enable=true),
		// the topic is created.
		req.AllowAutoTopicCreation = true
		resp, err = req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("Metadata: %v", err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
			t.Errorf("Metadata v%d with allow_auto_topic_creation: %+v, want the topic with 1 partition", req.Version, resp.Topics)
		}
	})
}

// TestFranzGoLongPoll checks that a fetch parked on an empty partition
// returns as soon as a record is appended, not when MaxWait runs out.
func TestFranzGoLongPoll(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "longpoll"
	createTopic(t, adm, topic, 1, nil)
	const maxWait = 10 * time.Second
	cons := newKgo(t, n.KafkaAddr(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(maxWait))
	prod := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic))

	for round := 0; round < 3; round++ {
		type result struct {
			recs []*kgo.Record
			at   time.Time
		}
		done := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*maxWait)
			defer cancel()
			var recs []*kgo.Record
			for len(recs) == 0 && ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				recs = append(recs, fs.Records()...)
			}
			done <- result{recs, time.Now()}
		}()
		// Let the consumer's fetch reach the broker and park.
		time.Sleep(300 * time.Millisecond)
		select {
		case r := <-done:
			t.Fatalf("round %d: poll returned before anything was produced: %d records", round, len(r.recs))
		default:
		}
		sent := time.Now()
		val := "wake-" + strconv.Itoa(round)
		if err := prod.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Value: []byte(val)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		r := <-done
		lat := r.at.Sub(sent)
		if len(r.recs) != 1 || string(r.recs[0].Value) != val {
			t.Fatalf("round %d: long poll returned %d records, want %q", round, len(r.recs), val)
		}
		if lat > 2*time.Second {
			t.Errorf("round %d: a fetch parked with MaxWait %s returned %s after the produce; the append must wake it", round, maxWait, lat)
		}
		t.Logf("round %d: record delivered %s after produce was called", round, lat)
	}
}

// TestFranzGoSustainedIdempotentProduce produces flat out for a while with
// franz-go's defaults (idempotent, acks=all, several requests in flight per
// connection) and checks that every record is acknowledged, once, in order.
func TestFranzGoSustainedIdempotentProduce(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "sustained"
	createTopic(t, adm, topic, 3, nil)
	clientLogs := &logBuffer{}
	dumpOnFailure(t, "producer (franz-go) log", clientLogs.String)
	prod := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.WithLogger(kgoLogger{clientLogs}),
		kgo.RecordDeliveryTimeout(10*time.Second), kgo.ProducerLinger(time.Millisecond))
	dur, limit := 2*time.Second, 60000 // the limit keeps the read-back short
	if longTests() {
		dur, limit = 10*time.Second, 1<<30
	}
	ledger := newAckLedger()
	stop := time.Now().Add(dur)
	sent := 0
	for time.Now().Before(stop) && sent < limit {
		v := fmt.Sprintf("s-%08d", sent)
		prod.Produce(context.Background(), &kgo.Record{Key: []byte(v[len(v)-2:]), Value: []byte(v)}, ledger.promise)
		sent++
	}
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flushStart := time.Now()
	if err := prod.Flush(fctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	t.Logf("produced %d records in %s; the flush took %s", sent, dur, time.Since(flushStart).Round(time.Millisecond))
	acked, failed := ledger.counts()
	if failed > 0 || acked != sent {
		t.Errorf("produced %d records in %s: %d acknowledged, %d failed; first errors: %v", sent, dur, acked, failed, ledger.firstErrors(3))
	}
	where, _ := readEverything(t, n.KafkaAddr(), topic)
	verifyLedger(t, ledger, where, "sustained idempotent produce")
	// Per partition, records sit in the order they were produced.
	type vo struct {
		v   string
		off int64
	}
	byPart := map[int32][]vo{}
	for v, at := range ledger.acked {
		byPart[at.partition] = append(byPart[at.partition], vo{v, at.off()})
	}
	for p, list := range byPart {
		sort.Slice(list, func(i, j int) bool { return list[i].off < list[j].off })
		for i := 1; i < len(list); i++ {
			if list[i].v < list[i-1].v {
				t.Errorf("partition %d: %s at offset %d follows %s at offset %d: a producer's records were reordered",
					p, list[i].v, list[i].off, list[i-1].v, list[i-1].off)
				break
			}
		}
	}
}
