package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaGoGroupRead reads want messages with a kafka-go Reader in a group
// (FindCoordinator, Heartbeat, LeaveGroup and SyncGroup v0, JoinGroup v1-2,
// OffsetCommit v2, OffsetFetch v1), committing each synchronously.
func kafkaGoGroupRead(t *testing.T, addr, group, topic string, want int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           250 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: 500 * time.Millisecond,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		CommitInterval:    0, // commit synchronously
	})
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("kafka-go Reader.Close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var out []kafka.Message
	for len(out) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group Reader: after %d of %d messages: %v", len(out), want, err)
		}
		out = append(out, m)
	}
	return out
}

// TestKafkaGoGroupReader consumes with a kafka-go Reader with a GroupID,
// then checks that a second Reader of the group resumes after the
// committed offsets.
func TestKafkaGoGroupReader(t *testing.T) {
	t.Parallel()
	n := startNode(t, fastGroups)
	addr := n.KafkaAddr()
	const topic, group = "kafka-go-group", "kafka-go-g"
	kafkaGoCreateTopicConn(t, addr, topic, 2)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, Transport: newKafkaGoTransport(t)}
	defer w.Close()
	write := func(tag string, n int) {
		var msgs []kafka.Message
		for i := 0; i < n; i++ {
			msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprintf("%s-%d", tag, i))})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("kafka-go WriteMessages: %v", err)
		}
	}
	write("first", 20)
	seen := map[string]bool{}
	for _, m := range kafkaGoGroupRead(t, addr, group, topic, 20) {
		seen[string(m.Value)] = true
	}
	if len(seen) != 20 {
		t.Fatalf("first reader saw %d distinct messages, want 20", len(seen))
	}

	write("second", 10)
	for _, m := range kafkaGoGroupRead(t, addr, group, topic, 10) {
		if v := string(m.Value); v[:6] != "second" {
			t.Errorf("second reader got %s: it did not resume from the committed offsets", v)
		}
	}
}
