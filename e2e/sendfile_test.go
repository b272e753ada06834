package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
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
	sent := wire.SentFromFiles()
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
	if wire.SentFromFiles() == sent {
		t.Fatal("the consumers read nothing sent with sendfile")
	}
}

// segmentFDs counts this process's descriptors of segment files of dir.
func segmentFDs(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.Contains(target, "/"+dir+"/") && strings.HasSuffix(strings.TrimSuffix(target, " (deleted)"), ".log") {
			n++
		}
	}
	return n
}

// longFetch is a Fetch of partition 0 of topic from offset 0 that waits
// for more bytes than the partition holds.
func longFetch(topic string, minBytes int32, wait time.Duration) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID = -1
	r.MaxWaitMillis = int32(wait.Milliseconds())
	r.MinBytes = minBytes
	r.MaxBytes = 8 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 8 << 20
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// TestSendfileDescriptors: the descriptors that responses send records
// from are closed once the response is written, and when it never is
// (the connection is reset under parked long polls), without waiting for
// a garbage collection. A long poll holds none while it waits. A read
// that stops at a segment's end is answered at once, not after MaxWait.
func TestSendfileDescriptors(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "sendfile-fds"
	segBytes := strconv.Itoa(256 << 10)
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	prod := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	ctx := testCtx(t, 60*time.Second)
	var recs []*kgo.Record
	for range 300 {
		recs = append(recs, &kgo.Record{Value: bytes.Repeat([]byte{'x'}, 4<<10)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a GC would hide a leak
	dir := topic + "-0"
	base := segmentFDs(t, dir)
	sent := wire.SentFromFiles()

	// A segment's worth and more, with MinBytes past it: the read stops
	// at the first segment's end and is answered at once, from the file.
	rc := dialRaw(t, n.KafkaAddr())
	start := time.Now()
	corr := rc.send(longFetch(topic, 1<<20, 10*time.Second), 11)
	resp := kmsg.NewPtrFetchResponse()
	rc.recv(corr, resp, 11)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a read stopped at a segment's end waited %v for MinBytes", took)
	}
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got < 64<<10 {
		t.Fatalf("read %d bytes", got)
	}
	if wire.SentFromFiles() == sent {
		t.Fatal("nothing was sent with sendfile")
	}
	if got := segmentFDs(t, dir); got != base {
		t.Fatalf("%d segment descriptors after the response was read, want %d", got, base)
	}

	// Long polls parked from an offset with nothing past it hold nothing;
	// pipelined behind one that reads (and is answered in order after
	// them), they are dropped unwritten when the connection is reset.
	end := endOffsets(t, adm, topic)[0]
	for range 5 {
		rc := dialRaw(t, n.KafkaAddr())
		for range 10 {
			r := longFetch(topic, 1<<30, 30*time.Second)
			r.Topics[0].Partitions[0].FetchOffset = end
			rc.send(r, 11)
		}
		rc.send(longFetch(topic, 1, time.Second), 11)
		time.Sleep(50 * time.Millisecond)
		if got := segmentFDs(t, dir); got > base+1 {
			t.Fatalf("%d segment descriptors with long polls parked, want at most %d", got, base+1)
		}
		rc.c.(*net.TCPConn).SetLinger(0)
		rc.c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for segmentFDs(t, dir) != base {
		if time.Now().After(deadline) {
			t.Fatalf("%d segment descriptors outlive their connections, want %d", segmentFDs(t, dir), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
