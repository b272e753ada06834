package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "brokerd-e2e-sarama"
	cfg.Version = version
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 15 * time.Second
	cfg.Net.WriteTimeout = 5 * time.Second
	return cfg
}

// TestSarama creates a topic, produces with a SyncProducer (acks=all),
// consumes from the oldest offset and lists offsets, for several protocol
// levels, codecs and the idempotent producer.
func TestSarama(t *testing.T) {
	n := startNode(t)
	addrs := []string{n.KafkaAddr()}

	cases := []struct {
		name       string
		version    sarama.KafkaVersion
		codec      sarama.CompressionCodec
		idempotent bool
		perPart    int
		partitions int32
	}{
		{name: "v2.8-none", version: sarama.V2_8_0_0, codec: sarama.CompressionNone, perPart: 50, partitions: 2},
		{name: "v2.8-idempotent", version: sarama.V2_8_0_0, codec: sarama.CompressionSnappy, idempotent: true, perPart: 50, partitions: 2},
		{name: "v1.0-gzip", version: sarama.V1_0_0_0, codec: sarama.CompressionGZIP, perPart: 20, partitions: 2},
		{name: "v2.1-zstd", version: sarama.V2_1_0_0, codec: sarama.CompressionZSTD, perPart: 20, partitions: 1},
		{name: "v3.6-lz4", version: sarama.V3_6_0_0, codec: sarama.CompressionLZ4, perPart: 20, partitions: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := saramaConfig(tc.version)
			cfg.Producer.Compression = tc.codec
			if tc.idempotent {
				cfg.Producer.Idempotent = true
				cfg.Net.MaxOpenRequests = 1
			}
			topic := "sarama-" + strings.ReplaceAll(tc.name, ".", "_")

			admin, err := sarama.NewClusterAdmin(addrs, cfg)
			if err != nil {
				t.Fatalf("sarama %s: NewClusterAdmin: %v", tc.version, err)
			}
			defer admin.Close()
			detail := &sarama.TopicDetail{NumPartitions: tc.partitions, ReplicationFactor: 1}
			if err := admin.CreateTopic(topic, detail, false); err != nil {
				t.Fatalf("sarama %s: CreateTopic: %v", tc.version, err)
			}
			err = admin.CreateTopic(topic, detail, false)
			var te *sarama.TopicError
			if !errors.As(err, &te) || te.Err != sarama.ErrTopicAlreadyExists {
				t.Errorf("sarama %s: CreateTopic twice: %v, want ErrTopicAlreadyExists", tc.version, err)
			}
			md, err := admin.DescribeTopics([]string{topic})
			if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != int(tc.partitions) {
				t.Fatalf("sarama %s: DescribeTopics: %v %+v", tc.version, err, md)
			}

			client, err := sarama.NewClient(addrs, cfg)
			if err != nil {
				t.Fatalf("sarama %s: NewClient: %v", tc.version, err)
			}
			defer client.Close()
			prod, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatalf("sarama %s: NewSyncProducer: %v", tc.version, err)
			}
			defer prod.Close()

			var msgs []*sarama.ProducerMessage
			for i := 0; i < tc.perPart; i++ {
				for p := int32(0); p < tc.partitions; p++ {
					msgs = append(msgs, &sarama.ProducerMessage{
						Topic:     topic,
						Partition: p,
						Key:       sarama.StringEncoder(fmt.Sprintf("k-%d-%d", p, i)),
						Value:     sarama.StringEncoder(fmt.Sprintf("v-%d-%d-%s", p, i, strings.Repeat("s", i))),
						Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}},
					})
				}
			}
			if err := prod.SendMessages(msgs); err != nil {
				t.Fatalf("sarama %s: SendMessages %d (acks=all, %s): %v", tc.version, len(msgs), tc.codec, err)
			}
			// One by one too, checking the returned offsets.
			for p := int32(0); p < tc.partitions; p++ {
				part, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("last")})
				if err != nil || part != p || off != int64(tc.perPart) {
					t.Fatalf("sarama %s: SendMessage to partition %d: partition %d offset %d err %v, want offset %d", tc.version, p, part, off, err, tc.perPart)
				}
			}

			for p := int32(0); p < tc.partitions; p++ {
				newest, err := client.GetOffset(topic, p, sarama.OffsetNewest)
				if err != nil || newest != int64(tc.perPart+1) {
					t.Errorf("sarama %s: GetOffset(newest) partition %d = %d %v, want %d", tc.version, p, newest, err, tc.perPart+1)
				}
				oldest, err := client.GetOffset(topic, p, sarama.OffsetOldest)
				if err != nil || oldest != 0 {
					t.Errorf("sarama %s: GetOffset(oldest) partition %d = %d %v, want 0", tc.version, p, oldest, err)
				}
			}

			consumer, err := sarama.NewConsumerFromClient(client)
			if err != nil {
				t.Fatalf("sarama %s: NewConsumer: %v", tc.version, err)
			}
			defer consumer.Close()
			for p := int32(0); p < tc.partitions; p++ {
				pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
				if err != nil {
					t.Fatalf("sarama %s: ConsumePartition %d: %v", tc.version, p, err)
				}
				timeout := time.After(20 * time.Second)
				for i := 0; i <= tc.perPart; i++ {
					select {
					case m := <-pc.Messages():
						wantV := fmt.Sprintf("v-%d-%d-%s", p, i, strings.Repeat("s", i))
						wantK := fmt.Sprintf("k-%d-%d", p, i)
						if i == tc.perPart {
							wantV, wantK = "last", ""
						}
						if m.Offset != int64(i) || string(m.Value) != wantV || string(m.Key) != wantK {
							t.Fatalf("sarama %s: partition %d message %d: offset %d key %q value %.30q, want offset %d key %q value %.30q",
								tc.version, p, i, m.Offset, m.Key, m.Value, i, wantK, wantV)
						}
						if i < tc.perPart && (len(m.Headers) != 1 || string(m.Headers[0].Key) != "i" || string(m.Headers[0].Value) != fmt.Sprint(i)) {
							t.Fatalf("sarama %s: partition %d message %d: headers %v", tc.version, p, i, m.Headers)
						}
					case err := <-pc.Errors():
						t.Fatalf("sarama %s: consume partition %d: %v", tc.version, p, err)
					case <-timeout:
						t.Fatalf("sarama %s: partition %d: only %d of %d messages within 20s", tc.version, p, i, tc.perPart+1)
					}
				}
				// Nothing more.
				select {
				case m := <-pc.Messages():
					t.Errorf("sarama %s: partition %d: unexpected extra message at offset %d", tc.version, p, m.Offset)
				case <-time.After(300 * time.Millisecond):
				}
				if hwm := pc.HighWaterMarkOffset(); hwm != int64(tc.perPart+1) {
					t.Errorf("sarama %s: partition %d high watermark %d, want %d", tc.version, p, hwm, tc.perPart+1)
				}
				pc.Close()
			}

			if err := admin.DeleteTopic(topic); err != nil {
				t.Errorf("sarama %s: DeleteTopic: %v", tc.version, err)
			}
		})
	}
}
