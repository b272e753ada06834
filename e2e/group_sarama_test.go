package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaGroupHandler marks every message it gets and, once want distinct
// messages have arrived in this session, commits and signals done.
type saramaGroupHandler struct {
	mu     sync.Mutex
	got    map[string]int // value -> times seen
	want   int
	done   chan struct{}
	closed bool
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.mu.Lock()
		h.got[string(msg.Value)]++
		n := len(h.got)
		sess.MarkMessage(msg, "")
		if n >= h.want && !h.closed {
			// Auto-commit is off: commit what was marked, synchronously.
			sess.Commit()
			h.closed = true
			close(h.done)
		}
		h.mu.Unlock()
	}
	return nil
}

// saramaConsumeGroup consumes with a sarama ConsumerGroup until want
// distinct messages arrived, commits, and returns what it saw.
func saramaConsumeGroup(t *testing.T, addr, group, topic string, version sarama.KafkaVersion, want int) map[string]int {
	t.Helper()
	cfg := saramaConfig(version)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false // commit explicitly at the end
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama %s: NewConsumerGroup: %v", version, err)
	}
	h := &saramaGroupHandler{got: map[string]int{}, want: want, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	go func() {
		for err := range cg.Errors() {
			t.Logf("sarama %s consumer group error: %v", version, err)
		}
	}()
	select {
	case <-h.done:
	case err := <-errc:
		t.Fatalf("sarama %s: Consume: %v", version, err)
	case <-time.After(30 * time.Second):
		h.mu.Lock()
		n := len(h.got)
		h.mu.Unlock()
		t.Fatalf("sarama %s: %d of %d messages after 30s", version, n, want)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("sarama %s: Consume: %v", version, err)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("sarama %s: close consumer group: %v", version, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got
}

// TestSaramaConsumerGroup consumes with a sarama ConsumerGroup, commits,
// and checks that a second session of the group resumes after the
// committed offsets; at a new protocol level and an old one.
func TestSaramaConsumerGroup(t *testing.T) {
	t.Parallel()
	n := startNode(t, fastGroups)
	addr := n.KafkaAddr()
	for _, version := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V1_0_0_0} {
		t.Run(version.String(), func(t *testing.T) {
			t.Parallel()
			topic, group := "sarama-group-"+version.String(), "sarama-g-"+version.String()
			cfg := saramaConfig(version)
			admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewClusterAdmin: %v", err)
			}
			defer admin.Close()
			if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
				t.Fatalf("CreateTopic: %v", err)
			}
			produce := func(tag string, n int) {
				prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
				if err != nil {
					t.Fatalf("NewSyncProducer: %v", err)
				}
				defer prod.Close()
				for i := 0; i < n; i++ {
					msg := &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))}
					if _, _, err := prod.SendMessage(msg); err != nil {
						t.Fatalf("produce: %v", err)
					}
				}
			}
			produce("first", 30)
			got := saramaConsumeGroup(t, addr, group, topic, version, 30)
			for i := 0; i < 30; i++ {
				if got[fmt.Sprintf("first-%d", i)] == 0 {
					t.Fatalf("first session missed first-%d", i)
				}
			}

			offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
			if err != nil {
				t.Fatalf("ListConsumerGroupOffsets: %v", err)
			}
			for p := int32(0); p < 3; p++ {
				if b := offs.GetBlock(topic, p); b == nil || b.Err != sarama.ErrNoError || b.Offset != 10 {
					t.Errorf("committed offset of partition %d: %+v, want 10", p, b)
				}
			}

			produce("second", 15)
			got = saramaConsumeGroup(t, addr, group, topic, version, 15)
			for v := range got {
				if len(v) > 5 && v[:5] == "first" {
					t.Errorf("second session re-read %s: committed offsets were not used", v)
				}
			}

			groups, err := admin.ListConsumerGroups()
			if err != nil {
				t.Fatalf("ListConsumerGroups: %v", err)
			}
			if pt, ok := groups[group]; !ok || pt != "consumer" {
				t.Errorf("ListConsumerGroups: %v, want %s with protocol type consumer", groups, group)
			}
			desc, err := admin.DescribeConsumerGroups([]string{group})
			if err != nil || len(desc) != 1 || desc[0].State != "Empty" {
				t.Errorf("DescribeConsumerGroups after the consumers left: %+v %v", desc, err)
			}
		})
	}
}
