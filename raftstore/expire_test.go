package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// TestExpireProducers: idempotent producers and transactional ids that
// have gone quiet are forgotten by an expiry command carrying the leader's
// clock, durably; a transactional id with a transaction in progress is
// kept. Before, producer state grew forever.
func TestExpireProducers(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "x", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	quiet, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	idem := func(pid int64, seq int32) batchtest.Options {
		return batchtest.Options{ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}
	}
	produce(t, s, "x", 0, idem(quiet.ProducerID, 0), "q")
	done, err := s.InitTxnProducer(ctx, now.UnixMilli(), "done", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	open, err := s.InitTxnProducer(ctx, now.UnixMilli(), "open", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPartitionsToTxn(ctx, now.UnixMilli(), "open", open.ProducerID, 0, []TopicPartition{{"x", 0}}); err != nil {
		t.Fatal(err)
	}

	// Two and a half days on, "busy" writes; the expiry pass runs at three days.
	s.fsm.producers[busy.ProducerID].LastTimestamp = now.Add(60 * time.Hour).UnixMilli()
	if err := s.ExpireProducers(ctx, now.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if r := produce(t, s, "x", 0, idem(quiet.ProducerID, 1), "late"); !errors.Is(r.Err, ErrUnknownProducerID) {
		t.Fatalf("quiet producer after expiry: %v", r.Err)
	}
	if r := produce(t, s, "x", 0, idem(busy.ProducerID, 0), "b"); r.Err != nil {
		t.Fatalf("recently active producer expired: %v", r.Err)
	}
	if _, ok := s.Txn("done"); !ok {
		t.Fatal("transactional id expired before transactional.id.expiration.ms")
	}
	// Eight days on: the idle transactional id goes, with its producer;
	// the one with a transaction in progress stays.
	if err := s.ExpireProducers(ctx, now.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Txn("done"); ok {
		t.Fatal("idle transactional id not expired")
	}
	if _, ok := s.fsm.producers[done.ProducerID]; ok {
		t.Fatal("expired transactional id's producer kept")
	}
	if _, ok := s.Txn("open"); !ok {
		t.Fatal("transactional id with a transaction in progress expired")
	}
	s.crashForTest()

	// Durable: the checkpoint taken by the expiry... or the replay of it.
	s = openTestStore(t, dir)
	defer s.Close()
	if _, ok := s.Txn("done"); ok {
		t.Fatal("expired transactional id back after restart")
	}
	if _, ok := s.fsm.producers[quiet.ProducerID]; ok {
		t.Fatal("expired producer back after restart")
	}
	s.fsm.checkpointDue.Store(true)
	produce(t, s, "x", 0, batchtest.NoProducer, "tick")
	s.Close()
	s = openTestStore(t, dir)
	if _, ok := s.fsm.producers[quiet.ProducerID]; ok {
		t.Fatal("expired producer back after a checkpoint and restart")
	}
	if _, ok := s.Txn("open"); !ok {
		t.Fatal("open transaction lost")
	}
}

// TestAbortedIndexTrimmed: aborted-transaction entries below the log start
// offset are dropped when DeleteRecords (or retention) moves it.
func TestAbortedIndexTrimmed(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "a", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	ip, err := s.InitTxnProducer(ctx, now, "tx", 60000, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 3; i++ {
		if _, err := s.AddPartitionsToTxn(ctx, now, "tx", ip.ProducerID, 0, []TopicPartition{{"a", 0}}); err != nil {
			t.Fatal(err)
		}
		produceTxn(t, s, "tx", "a", 0, batchtest.Options{ProducerID: ip.ProducerID, BaseSequence: i, Transactional: true}, "v")
		if err := s.EndTxn(ctx, now, "tx", ip.ProducerID, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	if ab := s.AbortedTxns("a", 0, 0, 100); len(ab) != 3 {
		t.Fatalf("aborted %+v", ab)
	}
	// Transactions at [0,1], [2,3], [4,5]: delete below 3.
	if _, err := s.DeleteRecords(ctx, now, []DeleteRecordsSpec{{Topic: "a", Partition: 0, Offset: 3}}); err != nil {
		t.Fatal(err)
	}
	if ab := s.AbortedTxns("a", 0, 0, 100); len(ab) != 2 || ab[0].FirstOffset != 2 {
		t.Fatalf("after DeleteRecords to 3: %+v", ab)
	}
	if n := len(s.fsm.partition("a", 0).aborted); n != 2 {
		t.Fatalf("%d aborted entries kept", n)
	}
}
