package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTxn runs one franz-go transaction of n records to topic and ends it
// with commit or abort.
func produceTxn(t *testing.T, cl *kgo.Client, topic, tag string, n int, commit bool) {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", tag, i, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

func TestTransactionsCommitAbortReadCommitted(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	createTopic(t, newAdmin(t, addr), "txn-out", 2, nil)
	cl := newKgo(t, addr, kgo.TransactionalID("e2e-txn"), kgo.DefaultProduceTopic("txn-out"))

	produceTxn(t, cl, "txn-out", "aborted", 10, false)
	produceTxn(t, cl, "txn-out", "committed", 10, true)
	produceTxn(t, cl, "txn-out", "aborted2", 5, false)

	count := func(isolation kgo.IsolationLevel) map[string]int {
		c := newKgo(t, addr,
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txn-out": atStart(2)}),
			kgo.FetchIsolationLevel(isolation),
			kgo.FetchMaxWait(200*time.Millisecond))
		got := map[string]int{}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			fs := c.PollFetches(ctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
		}
		return got
	}
	rc := count(kgo.ReadCommitted())
	if len(rc) != 10 {
		t.Fatalf("read_committed saw %d distinct records, want the 10 committed: %v", len(rc), rc)
	}
	for v, c := range rc {
		if c != 1 || v[:9] != "committed" {
			t.Fatalf("read_committed saw %q %d times", v, c)
		}
	}
	if ru := count(kgo.ReadUncommitted()); len(ru) != 25 {
		t.Fatalf("read_uncommitted saw %d records, want all 25", len(ru))
	}
	// With nothing open, the last stable offset (ListOffsets latest with
	// read_committed) is the end offset; the ends hold the 25 records and
	// at least one marker per transaction.
	adm := newAdmin(t, addr)
	ends := endOffsets(t, adm, "txn-out")
	stable := listOffsets(t, "committed", "txn-out", func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListCommittedOffsets(ctx, "txn-out")
	})
	var total int64
	for p, e := range ends {
		total += e
		if stable[p] != e {
			t.Fatalf("partition %d: last stable offset %d, end %d, with no open transaction", p, stable[p], e)
		}
	}
	if total < 25+3 {
		t.Fatalf("end offsets %v sum to %d, want at least 28", ends, total)
	}
}

func TestTransactionsZombieFenced(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	createTopic(t, newAdmin(t, addr), "fence-out", 1, nil)
	old := newKgo(t, addr, kgo.TransactionalID("e2e-fence"), kgo.DefaultProduceTopic("fence-out"))
	ctx := testCtx(t, 20*time.Second)
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new incarnation with the same transactional id fences the old one
	// and aborts what it left open.
	fresh := newKgo(t, addr, kgo.TransactionalID("e2e-fence"), kgo.DefaultProduceTopic("fence-out"))
	produceTxn(t, fresh, "fence-out", "fresh", 3, true)

	err := old.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer got %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	got := consumeReadCommitted(t, addr, "fence-out", 1, 3)
	for _, v := range got {
		if v == "zombie" {
			t.Fatal("a read_committed consumer saw the zombie's record")
		}
	}
}

// consumeReadCommitted reads want records with read_committed.
func consumeReadCommitted(t *testing.T, addr, topic string, partitions int32, want int) []string {
	t.Helper()
	c := newKgo(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: atStart(partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := c.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	if len(out) < want {
		t.Fatalf("read_committed got %d records, want %d: %v", len(out), want, out)
	}
	return out
}
