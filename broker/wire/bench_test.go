package wire

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceAnswer is a trivial Produce handler: every partition succeeds.
func produceAnswer(_ context.Context, req *Request) (kmsg.Response, error) {
	p, ok := req.Msg.(*kmsg.ProduceRequest)
	if !ok {
		return req.Msg.ResponseKind(), nil
	}
	resp := kmsg.NewPtrProduceResponse()
	for _, t := range p.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, part := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = part.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

var benchSizes = []int{1 << 10, 64 << 10, 1 << 20}

// BenchmarkProduceRoundTrip: one Produce request and its response over
// loopback per op, through framing, decode, handler, encode and write.
// "sync" waits for each response; "pipelined" keeps 8 in flight.
func BenchmarkProduceRoundTrip(b *testing.B) {
	for _, size := range benchSizes {
		for _, window := range []int{1, 8} {
			mode := "sync"
			if window > 1 {
				mode = fmt.Sprintf("pipelined%d", window)
			}
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				benchRoundTrip(b, size, window)
			})
		}
	}
}

func benchRoundTrip(b *testing.B, recordBytes, window int) {
	s := startServer(b, Config{}, nil, produceAnswer)
	c := dialRaw(b, s.Addr())
	frame := sized(produceFrame(1, 9, -1, recordBytes))
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	sent, received := 0, 0
	for received < b.N {
		for sent < b.N && sent-received < window {
			c.send(frame)
			sent++
		}
		if _, err := c.readFrame(); err != nil {
			b.Fatal(err)
		}
		received++
	}
}

// BenchmarkProduceCodec is the CPU part alone: decode a Produce frame,
// encode its response.
func BenchmarkProduceCodec(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			frame := produceFrame(1, 9, -1, size)
			var out []byte
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := DecodeRequest(frame)
				if err != nil {
					b.Fatal(err)
				}
				resp, _ := produceAnswer(context.Background(), req)
				resp.SetVersion(req.Header.APIVersion)
				out = AppendResponse(out[:0], req.Header.CorrelationID, req.Header.APIKey, resp)
			}
		})
	}
}

// BenchmarkDecodeMetadataFootprint: decoding a Metadata request naming 2000
// topics and estimating what it holds, the extra work non-Produce requests
// pay for exact budget accounting.
func BenchmarkDecodeMetadataFootprint(b *testing.B) {
	md := kmsg.NewPtrMetadataRequest()
	for i := range 2000 {
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(fmt.Sprintf("some-topic-name-%d", i))
		md.Topics = append(md.Topics, topic)
	}
	frame := frameOf(1, nil, versioned(md, 12))
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRequest(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	req, err := DecodeRequest(frame)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("footprint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			footprint(req.Msg)
		}
	})
}
