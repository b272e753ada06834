package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// partitionFromKey routes "p<N>-..." keys to partition N, so the test knows
// the order each partition must hold.
var partitionFromKey = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
	s := strings.TrimPrefix(string(m.Key), "p")
	i := strings.IndexByte(s, '-')
	p, err := strconv.Atoi(s[:i])
	if err != nil {
		panic(fmt.Sprintf("bad test key %q", m.Key))
	}
	return p
})

// newKafkaGoTransport is a Transport of the test's own: kafka-go's shared
// DefaultTransport caches metadata for 6s, so a Writer on it does not see a
// topic created after its last refresh (client behaviour, not the broker's).
func newKafkaGoTransport(t *testing.T) *kafka.Transport {
	tr := &kafka.Transport{ClientID: "brokerd-e2e-kafka-go"}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// kafkaGoCreateTopicConn creates a topic the old way: Conn.Controller and
// Conn.CreateTopics (CreateTopics v0 over Metadata v1).
func kafkaGoCreateTopicConn(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	conn, err := kafka.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("kafka-go Dial: %v", err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatalf("kafka-go Conn.Controller (Metadata v1): %v", err)
	}
	cc, err := kafka.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		t.Fatalf("kafka-go dial controller %s:%d: %v", ctrl.Host, ctrl.Port, err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatalf("kafka-go Conn.CreateTopics %q: %v", topic, err)
	}
}

// kafkaGoRead reads want messages from one partition from the first offset
// with a group-less Reader.
func kafkaGoRead(t *testing.T, addr, topic string, partition, want int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   250 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatalf("kafka-go Reader.SetOffset: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []kafka.Message
	for len(out) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go Reader %s/%d: after %d of %d messages: %v", topic, partition, len(out), want, err)
		}
		out = append(out, m)
	}
	return out
}

func kafkaGoOffsets(t *testing.T, addr, topic string, partition int) (first, last int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, partition)
	if err != nil {
		t.Fatalf("kafka-go DialLeader %s/%d: %v", topic, partition, err)
	}
	defer conn.Close()
	first, err = conn.ReadFirstOffset()
	if err != nil {
		t.Fatalf("kafka-go ReadFirstOffset (ListOffsets v1) %s/%d: %v", topic, partition, err)
	}
	last, err = conn.ReadLastOffset()
	if err != nil {
		t.Fatalf("kafka-go ReadLastOffset (ListOffsets v1) %s/%d: %v", topic, partition, err)
	}
	return first, last
}

// TestKafkaGo writes with acks=all and every codec, reads back with a
// partition Reader, and lists offsets through Conn.
func TestKafkaGo(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	const partitions = 2
	const perPart = 30

	kcodecs := []struct {
		name  string
		codec kafka.Compression
	}{
		{"none", 0}, {"gzip", kafka.Gzip}, {"snappy", kafka.Snappy}, {"lz4", kafka.Lz4}, {"zstd", kafka.Zstd},
	}
	for _, c := range kcodecs {
		t.Run("acks=all/"+c.name, func(t *testing.T) {
			topic := "kafkago-" + c.name
			kafkaGoCreateTopicConn(t, addr, topic, partitions)
			w := &kafka.Writer{
				Addr:         kafka.TCP(addr),
				Transport:    newKafkaGoTransport(t),
				Topic:        topic,
				Balancer:     partitionFromKey,
				RequiredAcks: kafka.RequireAll,
				Compression:  c.codec,
				BatchTimeout: 5 * time.Millisecond,
				BatchSize:    25,
			}
			defer w.Close()
			var msgs []kafka.Message
			for i := 0; i < perPart; i++ {
				for p := 0; p < partitions; p++ {
					msgs = append(msgs, kafka.Message{
						Key:     []byte(fmt.Sprintf("p%d-%d", p, i)),
						Value:   []byte(fmt.Sprintf("%s value %d/%d %s", c.name, p, i, strings.Repeat("kg", i))),
						Headers: []kafka.Header{{Key: "n", Value: []byte(strconv.Itoa(i))}},
					})
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("kafka-go Writer (acks=all, %s) WriteMessages: %v", c.name, err)
			}
			for p := 0; p < partitions; p++ {
				got := kafkaGoRead(t, addr, topic, p, perPart)
				for i, m := range got {
					wantV := fmt.Sprintf("%s value %d/%d %s", c.name, p, i, strings.Repeat("kg", i))
					if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("p%d-%d", p, i) || string(m.Value) != wantV {
						t.Fatalf("partition %d message %d: offset %d key %q value %.30q, want offset %d value %.30q", p, i, m.Offset, m.Key, m.Value, i, wantV)
					}
					if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != strconv.Itoa(i) {
						t.Fatalf("partition %d message %d: headers %v", p, i, m.Headers)
					}
				}
				first, last := kafkaGoOffsets(t, addr, topic, p)
				if first != 0 || last != perPart {
					t.Errorf("partition %d: ReadFirstOffset %d ReadLastOffset %d, want 0 and %d", p, first, last, perPart)
				}
			}
		})
	}

	t.Run("acks=0", func(t *testing.T) {
		// The Writer's zero value is acks=0 (RequireNone): no responses,
		// but every record must still arrive.
		const topic = "kafkago-acks0"
		kafkaGoCreateTopicConn(t, addr, topic, 1)
		w := &kafka.Writer{Addr: kafka.TCP(addr), Transport: newKafkaGoTransport(t), Topic: topic, BatchTimeout: 5 * time.Millisecond, BatchSize: 10}
		if w.RequiredAcks != kafka.RequireNone {
			t.Fatalf("kafka-go Writer default acks = %v, want RequireNone", w.RequiredAcks)
		}
		const total = 100
		var msgs []kafka.Message
		for i := 0; i < total; i++ {
			msgs = append(msgs, kafka.Message{Value: []byte("fire-and-forget-" + strconv.Itoa(i))})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Several calls, so several acks=0 requests go out back to back on
		// one connection.
		for i := 0; i < total; i += 10 {
			if err := w.WriteMessages(ctx, msgs[i:i+10]...); err != nil {
				t.Fatalf("kafka-go Writer (acks=0) WriteMessages: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatalf("kafka-go Writer.Close: %v", err)
		}
		var last int64
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, last = kafkaGoOffsets(t, addr, topic, 0); last >= total {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if last != total {
			t.Fatalf("after %d acks=0 writes the end offset is %d, want %d", total, last, total)
		}
		got := kafkaGoRead(t, addr, topic, 0, total)
		for i, m := range got {
			if string(m.Value) != "fire-and-forget-"+strconv.Itoa(i) || m.Offset != int64(i) {
				t.Fatalf("acks=0 message %d: offset %d value %q", i, m.Offset, m.Value)
			}
		}
	})

	t.Run("Client", func(t *testing.T) {
		// The newer Client API negotiates versions with ApiVersions.
		cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		const topic = "kafkago-client"
		resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{
			Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}},
		})
		if err != nil || resp.Errors[topic] != nil {
			t.Fatalf("kafka-go Client.CreateTopics: %v / %v", err, resp)
		}
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 3 {
			t.Fatalf("kafka-go Client.Metadata: %v %+v", err, md)
		}
		w := &kafka.Writer{Addr: kafka.TCP(addr), Transport: newKafkaGoTransport(t), Topic: topic, RequiredAcks: kafka.RequireOne, Balancer: partitionFromKey}
		defer w.Close()
		if err := w.WriteMessages(ctx,
			kafka.Message{Key: []byte("p2-a"), Value: []byte("a")},
			kafka.Message{Key: []byte("p2-b"), Value: []byte("b")}); err != nil {
			t.Fatalf("kafka-go Writer (acks=1): %v", err)
		}
		lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.FirstOffsetOf(2), kafka.LastOffsetOf(2), kafka.LastOffsetOf(0)},
		}})
		if err != nil {
			t.Fatalf("kafka-go Client.ListOffsets: %v", err)
		}
		for _, po := range lo.Topics[topic] {
			if po.Error != nil {
				t.Errorf("ListOffsets partition %d: %v", po.Partition, po.Error)
			}
			wantFirst, wantLast := int64(0), int64(0)
			if po.Partition == 2 {
				wantLast = 2
			}
			if po.FirstOffset != wantFirst && po.FirstOffset != -1 || po.LastOffset != wantLast && po.LastOffset != -1 {
				t.Errorf("ListOffsets partition %d: first %d last %d, want %d and %d", po.Partition, po.FirstOffset, po.LastOffset, wantFirst, wantLast)
			}
		}
	})
}
