package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzGoSendfile consumes large batches, which the broker sends from
// the segment files with sendfile, across many small segments, with
// read_uncommitted and read_committed consumers, the latter held at the
// last stable offset by an open transaction and released by its commit.
func TestFranzGoSendfile(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "sendfile"
	segBytes := strconv.Itoa(300 << 10)
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	prod := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(256<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := func(i int) []byte {
		return append([]byte(fmt.Sprintf("%08d:", i)), bytes.Repeat([]byte{byte('a' + i%26)}, 4<<10)...)
	}
	ctx := testCtx(t, 60*time.Second)
	const plain = 2000
	var recs []*kgo.Record
	for i := range plain {
		recs = append(recs, &kgo.Record{Value: value(i)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// An open transaction holds read_committed consumers at its start.
	txn := newKgo(t, n.KafkaAddr(), kgo.TransactionalID("sendfile-txn"), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs = recs[:0]
	for i := plain; i < plain+100; i++ {
		recs = append(recs, &kgo.Record{Value: value(i)})
	}
	if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce in a transaction: %v", err)
	}

	// check reads records first..last-1 from cl.
	check := func(name string, cl *kgo.Client, first, last int) {
		t.Helper()
		next := first
		for next < last && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					t.Fatalf("%s: fetch at %d: %v", name, next, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if !bytes.Equal(r.Value, value(next)) {
					t.Fatalf("%s: record %d (offset %d) holds %.12q", name, next, r.Offset, r.Value)
				}
				next++
			})
		}
		if next != last {
			t.Fatalf("%s: read up to %d, want %d", name, next, last)
		}
	}
	from := map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}
	uncommitted := newKgo(t, n.KafkaAddr(), kgo.ConsumePartitions(from), kgo.FetchMaxPartitionBytes(1<<20))
	check("read_uncommitted", uncommitted, 0, plain+100)
	committed := newKgo(t, n.KafkaAddr(), kgo.ConsumePartitions(from), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	check("read_committed before the commit", committed, 0, plain)
	// Nothing past the open transaction's start.
	short, cancel := context.WithTimeout(ctx, time.Second)
	fs := committed.PollFetches(short)
	cancel()
	if fs.NumRecords() != 0 {
		t.Fatalf("read_committed read %d records of an open transaction", fs.NumRecords())
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	check("read_committed after the commit", committed, plain, plain+100)
}
