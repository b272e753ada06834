package raftstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// BenchmarkProduceCommand is the produce command's CPU cost outside
// apply: encoding on the proposer and decoding on every replica, for a
// request of 8 batches of 1 KiB.
func BenchmarkProduceCommand(b *testing.B) {
	c := &produceCmd{Now: 1}
	for p := range 8 {
		c.Batches = append(c.Batches, ProduceBatch{Topic: "orders", Partition: int32(p), Data: bytes.Repeat([]byte{1}, 1024)})
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := decodeProduce(encodeProduce(c)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreProduce is one idempotent 1 KiB batch through a single
// node's raft and apply, waited for.
func BenchmarkStoreProduce(b *testing.B) {
	s := openBenchStore(b)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "bench", topic.NewID(), 1, nil); err != nil {
		b.Fatal(err)
	}
	pid, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte{7}, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		data := batchtest.New(batchtest.Options{ProducerID: pid.ProducerID, BaseSequence: int32(i)}, value)
		res, err := s.Produce(ctx, time.Now().UnixMilli(), []ProduceBatch{{Topic: "bench", Data: data}})
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res)
		}
	}
}

func openBenchStore(b *testing.B) *Store {
	s, err := Open(Config{NodeID: 1, DataDir: b.TempDir(), RaftAddr: "127.0.0.1:0",
		Broker: BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitLeader(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}
