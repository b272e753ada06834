package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestExactlyOnceAcrossKill runs franz-go's GroupTransactSession
// (consume, transform, produce, commit offsets in the transaction) against
// a brokerd subprocess, kills the broker with SIGKILL in the middle, restarts
// it, and checks that the output topic read with read_committed holds every
// input exactly once.
func TestExactlyOnceAcrossKill(t *testing.T) {
	const inputs = 600
	b := newBrokerProc(t)
	b.start()
	addr := b.kafkaAddr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "eos-in", 3, nil)
	createTopic(t, adm, "eos-out", 3, nil)

	prod := newKgo(t, addr, kgo.DefaultProduceTopic("eos-in"))
	ctx := testCtx(t, 30*time.Second)
	for i := 0; i < inputs; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("v-%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce input %d: %v", i, err)
		}
	}
	prod.Close()

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(addr),
		kgo.TransactionalID("eos-worker"),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup("eos-group"),
		kgo.ConsumeTopics("eos-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic("eos-out"),
		kgo.RetryTimeout(60*time.Second),
		kgo.SessionTimeout(6*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	var committed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			fs := sess.PollFetches(pctx)
			cancel()
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Logf("begin: %v", err)
				continue
			}
			var n int64
			fs.EachRecord(func(r *kgo.Record) {
				sess.Produce(context.Background(), &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}, nil)
				n++
			})
			ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			ok, err := sess.End(ectx, kgo.TryCommit)
			cancel()
			if err != nil {
				t.Logf("end: %v (records will be reprocessed)", err)
			}
			if ok {
				committed.Add(n)
			}
		}
	}()

	// Kill the broker once about a third of the inputs are through.
	deadline := time.Now().Add(60 * time.Second)
	for committed.Load() < inputs/3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.kill()
	time.Sleep(300 * time.Millisecond)
	b.start()

	deadline = time.Now().Add(90 * time.Second)
	for committed.Load() < inputs && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if c := committed.Load(); c < inputs {
		t.Fatalf("only %d of %d inputs committed by the worker", c, inputs)
	}

	got := consumeReadCommitted(t, addr, "eos-out", 3, inputs)
	// Keep reading a little to catch duplicates beyond the first inputs.
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	extra := consumeReadCommittedAll(t, addr, "eos-out", 3, 2*time.Second)
	if len(extra) != len(got) {
		t.Fatalf("read_committed output holds %d records, want exactly %d", len(extra), inputs)
	}
	for i := 0; i < inputs; i++ {
		v := fmt.Sprintf("out-v-%04d", i)
		if seen[v] != 1 {
			t.Fatalf("%s appears %d times in the committed output", v, seen[v])
		}
	}
}

// consumeReadCommittedAll reads everything visible to read_committed until
// nothing new arrives for quiet.
func consumeReadCommittedAll(t *testing.T, addr, topic string, partitions int32, quiet time.Duration) []string {
	t.Helper()
	c := newKgo(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: atStart(partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	last := time.Now()
	for time.Since(last) < quiet {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := c.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			last = time.Now()
		})
	}
	return out
}
