package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

func TestTransactions(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	for _, name := range []string{"in", "out"} {
		if err := s.CreateTopic(ctx, name, topic.NewID(), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	ip, err := s.InitTxnProducer(ctx, now, "tx-1", 60000, -1, -1)
	if err != nil || ip.ProducerEpoch != 0 {
		t.Fatalf("init: %+v %v", ip, err)
	}
	pid, ep := ip.ProducerID, ip.ProducerEpoch
	txnOpt := func(epoch int16, seq int32) batchtest.Options {
		return batchtest.Options{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true}
	}
	// Writing before AddPartitionsToTxn is refused.
	if r := produceTxn(t, s, "tx-1", "out", 0, txnOpt(ep, 0), "early"); !errors.Is(r.Err, ErrInvalidTxnState) {
		t.Fatalf("produce outside a transaction: %v", r.Err)
	}
	produce(t, s, "out", 0, batchtest.NoProducer, "plain") // offset 0

	// Transaction 1: aborted.
	errs, err := s.AddPartitionsToTxn(ctx, now, "tx-1", pid, ep, []TopicPartition{{"out", 0}})
	if err != nil || errs[0] != nil {
		t.Fatalf("add partitions: %v %v", errs, err)
	}
	if r := produceTxn(t, s, "tx-1", "out", 0, txnOpt(ep, 0), "a1", "a2"); r.Err != nil || r.BaseOffset != 1 {
		t.Fatalf("txn produce: %+v", r)
	}
	if lso := s.LastStableOffset("out", 0); lso != 1 {
		t.Fatalf("LSO with open txn = %d, want 1", lso)
	}
	if err := s.EndTxn(ctx, now, "tx-1", pid, ep, false); err != nil {
		t.Fatalf("abort: %v", err)
	}
	l, _ := s.Log("out", 0)
	if lso := s.LastStableOffset("out", 0); lso != l.EndOffset() || lso != 4 {
		t.Fatalf("LSO after abort = %d, end %d, want 4", lso, l.EndOffset())
	}
	if ab := s.AbortedTxns("out", 0, 0, 4); len(ab) != 1 || ab[0] != (AbortedTxn{pid, 1, 3}) {
		t.Fatalf("aborted txns %+v", ab)
	}
	// A retried abort is fine; a commit after it is not.
	if err := s.EndTxn(ctx, now, "tx-1", pid, ep, false); err != nil {
		t.Fatalf("retried abort: %v", err)
	}
	if err := s.EndTxn(ctx, now, "tx-1", pid, ep, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit after abort: %v", err)
	}

	// Transaction 2: committed, with offsets.
	if _, err := s.AddPartitionsToTxn(ctx, now, "tx-1", pid, ep, []TopicPartition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOffsetsToTxn(ctx, now, "tx-1", pid, ep, "g"); err != nil {
		t.Fatal(err)
	}
	if r := produceTxn(t, s, "tx-1", "out", 0, txnOpt(ep, 2), "c1"); r.Err != nil || r.BaseOffset != 4 {
		t.Fatalf("txn produce 2: %+v", r)
	}
	errs, err = s.TxnOffsetCommit(ctx, now, "tx-1", pid, ep, "g", []OffsetCommit{{Topic: "in", Partition: 0, Offset: 10, LeaderEpoch: -1}})
	if err != nil || errs[0] != nil {
		t.Fatalf("txn offset commit: %v %v", errs, err)
	}
	if _, ok := s.GroupOffset("g", "in", 0); ok {
		t.Fatal("transactional offset visible before commit")
	}
	if !s.PendingTxnOffset("g", "in", 0) || s.PendingTxnOffset("g", "in", 1) || s.PendingTxnOffset("other", "in", 0) {
		t.Fatal("PendingTxnOffset does not report exactly the staged offset")
	}
	if err := s.EndTxn(ctx, now, "tx-1", pid, ep, true); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if o, ok := s.GroupOffset("g", "in", 0); !ok || o.Offset != 10 {
		t.Fatalf("offset after commit: %+v %v", o, ok)
	}
	if s.PendingTxnOffset("g", "in", 0) {
		t.Fatal("offset still pending after the commit")
	}

	// Transaction 3 left open, then a new incarnation fences the old one
	// and aborts what it left.
	if _, err := s.AddPartitionsToTxn(ctx, now, "tx-1", pid, ep, []TopicPartition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	if r := produceTxn(t, s, "tx-1", "out", 0, txnOpt(ep, 3), "zombie"); r.Err != nil {
		t.Fatal(r.Err)
	}
	s.crashForTest()
	s = openTestStore(t, dir)
	defer s.Close()
	if lso := s.LastStableOffset("out", 0); lso != 6 {
		t.Fatalf("LSO of open txn after crash = %d, want 6", lso)
	}
	ip2, err := s.InitTxnProducer(ctx, now, "tx-1", 60000, -1, -1)
	if err != nil || ip2.ProducerID != pid || ip2.ProducerEpoch != ep+1 {
		t.Fatalf("re-init: %+v %v", ip2, err)
	}
	l, _ = s.Log("out", 0)
	if lso := s.LastStableOffset("out", 0); lso != l.EndOffset() {
		t.Fatalf("LSO after re-init %d, end %d", lso, l.EndOffset())
	}
	if err := s.EndTxn(ctx, now, "tx-1", pid, ep, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie EndTxn: %v, want ErrProducerFenced", err)
	}
	if _, err := s.AddPartitionsToTxn(ctx, now, "tx-1", pid, ep, []TopicPartition{{"out", 0}}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie AddPartitions: %v", err)
	}
	if r := produceTxn(t, s, "tx-1", "out", 0, txnOpt(ep, 4), "zombie2"); !errors.Is(r.Err, ErrInvalidProducerEpoch) {
		t.Fatalf("zombie produce: %v", r.Err)
	}
}

func TestTransactionTimeout(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "out", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ip, _ := s.InitTxnProducer(ctx, start.UnixMilli(), "slow", 1000, -1, -1)
	if _, err := s.AddPartitionsToTxn(ctx, start.UnixMilli(), "slow", ip.ProducerID, ip.ProducerEpoch, []TopicPartition{{"out", 0}}); err != nil {
		t.Fatal(err)
	}
	s.abortTimedOut(ctx, start.Add(500*time.Millisecond))
	if tx, _ := s.Txn("slow"); tx.State != TxnOngoing {
		t.Fatalf("aborted before its timeout: %s", tx.State)
	}
	s.abortTimedOut(ctx, start.Add(2*time.Second))
	tx, _ := s.Txn("slow")
	if tx.State != TxnCompleteAbort || tx.ProducerEpoch != ip.ProducerEpoch+1 {
		t.Fatalf("after timeout: state %s epoch %d", tx.State, tx.ProducerEpoch)
	}
	if err := s.EndTxn(ctx, start.UnixMilli(), "slow", ip.ProducerID, ip.ProducerEpoch, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("EndTxn of the timed-out producer: %v", err)
	}
}

// TestOpenBeforePublished: a transaction's first batch on a partition is
// recorded open before Append publishes it. It was recorded after: a
// read_committed fetch woken by the append read the new end offset and no
// open transaction, so its last stable offset passed records that later
// aborted (the fault harness saw a read_committed reader return a value of
// an aborted transaction).
func TestOpenBeforePublished(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "t", [16]byte{7}, 1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	ip, err := s.InitTxnProducer(ctx, now, "tx", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPartitionsToTxn(ctx, now, "tx", ip.ProducerID, ip.ProducerEpoch, []TopicPartition{{"t", 0}}); err != nil {
		t.Fatal(err)
	}
	var lso, end int64 = -2, -2
	testAfterAppend = func(p *partition) {
		end, lso = p.log.EndOffset(), s.LastStableOffset("t", 0)
	}
	defer func() { testAfterAppend = nil }()
	if r := produceTxn(t, s, "tx", "t", 0, batchtest.Options{ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, Transactional: true}, "a", "b"); r.Err != nil {
		t.Fatal(r.Err)
	}
	if end != 2 || lso != 0 {
		t.Fatalf("right after the transactional batch was published: end %d, last stable offset %d; want 2 and 0", end, lso)
	}
}

// TestProduceTxnIDOwnsProducer: apply refuses a transactional batch whose
// producer the command's transactional id does not own (none, or
// another's), before its sequence is looked at, and accepts it with its
// own; a command of an earlier version, without the id, applies as it
// did.
func TestProduceTxnIDOwnsProducer(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "t", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	ip, err := s.InitTxnProducer(ctx, now, "victim", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.InitTxnProducer(ctx, now, "other", 60000, -1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPartitionsToTxn(ctx, now, "victim", ip.ProducerID, ip.ProducerEpoch, []TopicPartition{{"t", 0}}); err != nil {
		t.Fatal(err)
	}
	o := batchtest.Options{ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, Transactional: true}
	for _, id := range []string{"", "other", "unknown"} {
		if r := produceTxn(t, s, id, "t", 0, o, "injected"); !errors.Is(r.Err, ErrInvalidPIDMapping) {
			t.Errorf("transactional id %q: %v, want ErrInvalidPIDMapping", id, r.Err)
		}
	}
	if r := produceTxn(t, s, "victim", "t", 0, o, "own"); r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("own transactional id: %+v", r)
	}
	// A retry of that batch under another id is refused too, not answered
	// as a duplicate with its offset.
	if r := produceTxn(t, s, "other", "t", 0, o, "own"); !errors.Is(r.Err, ErrInvalidPIDMapping) {
		t.Errorf("retry under another id: %+v", r)
	}
	// A legacy command (no transactional id) is applied as before.
	o.BaseSequence = 1
	data := encodeProduce(&produceCmd{Legacy: true, Now: now, Batches: []ProduceBatch{{Topic: "t", Data: batchtest.New(o, []byte("legacy"))}}})
	f, err := s.proposeBounded(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.await(ctx, f); err != nil {
		t.Fatal(err)
	}
	if res, ok := f.Response().([]ProduceResult); !ok || res[0].Err != nil || res[0].BaseOffset != 1 {
		t.Fatalf("legacy command: %+v", f.Response())
	}
}
