package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRequest builds a Produce request with the given shape; records are
// opaque bytes to the wire layer.
func produceRequest(version int16, topics, partitions, recordBytes int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = -1
	for ti := range topics {
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = fmt.Sprintf("topic-%d", ti)
		topic.TopicID[0] = byte(ti + 1)
		for pi := range partitions {
			p := kmsg.NewProduceRequestTopicPartition()
			p.Partition = int32(pi)
			p.Records = bytes.Repeat([]byte{byte(pi)}, recordBytes)
			topic.Partitions = append(topic.Partitions, p)
		}
		req.Topics = append(req.Topics, topic)
	}
	return req
}

// hostileProduce hand-builds a flexible Produce frame with one topic of n
// empty partitions, each carrying a tagged field when tags is set: the
// shape that makes kmsg allocate most per frame byte.
func hostileProduce(version int16, n int, tags bool) []byte {
	b := fixedHeader(apiKeyProduce, version, 1)
	b = append(b, clientIDBytes(nil)...)
	b = append(b, 0)               // header tags
	b = append(b, 0)               // null transactional id
	b = append(b, 0, 1)            // acks
	b = append(b, 0, 0, 0, 1)      // timeout
	b = binary.AppendUvarint(b, 2) // one topic
	if version >= 13 {
		b = append(b, make([]byte, 16)...)
	} else {
		b = append(b, 2, 't')
	}
	b = binary.AppendUvarint(b, uint64(n+1))
	for i := range n {
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		b = append(b, 1) // empty records
		if tags {
			b = append(b, 1, 0, 0) // one tag, key 0, no data
		} else {
			b = append(b, 0)
		}
	}
	return append(b, 0, 0) // topic and request tags
}

func TestDecodeRequestRoundTrip(t *testing.T) {
	metadata := func(v int16, topics ...string) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		for _, name := range topics {
			topic := kmsg.NewMetadataRequestTopic()
			topic.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, topic)
		}
		return versioned(req, v)
	}
	apiVersions := func(v int16) kmsg.Request {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName = "brokerd-test"
		req.ClientSoftwareVersion = "1.0"
		return versioned(req, v)
	}
	fetch := func(v int16) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 500
		topic := kmsg.NewFetchRequestTopic()
		topic.Topic = "orders"
		topic.TopicID[3] = 9
		part := kmsg.NewFetchRequestTopicPartition()
		part.Partition = 2
		part.FetchOffset = 1234
		topic.Partitions = append(topic.Partitions, part)
		req.Topics = append(req.Topics, topic)
		return versioned(req, v)
	}
	commit := func(v int16) kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = "g"
		topic := kmsg.NewOffsetCommitRequestTopic()
		topic.Topic = "orders"
		part := kmsg.NewOffsetCommitRequestTopicPartition()
		part.Offset = 99
		topic.Partitions = append(topic.Partitions, part)
		req.Topics = append(req.Topics, topic)
		return versioned(req, v)
	}
	reqs := []kmsg.Request{
		produceRequest(3, 2, 3, 100), produceRequest(9, 1, 1, 10), produceRequest(13, 3, 2, 70),
		metadata(0, "a", "b"), metadata(4), metadata(9, "x"), metadata(12, "y", "z"),
		apiVersions(0), apiVersions(3), apiVersions(4),
		fetch(4), fetch(11), fetch(12), fetch(16),
		commit(2), commit(8),
	}
	for _, req := range reqs {
		name := fmt.Sprintf("key%d_v%d", req.Key(), req.GetVersion())
		t.Run(name, func(t *testing.T) {
			frame := frameOf(77, strPtr("cid"), req)
			got, err := DecodeRequest(frame)
			if err != nil {
				t.Fatal(err)
			}
			if got.Header.APIKey != req.Key() || got.Header.APIVersion != req.GetVersion() ||
				got.Header.CorrelationID != 77 || got.Size != len(frame) {
				t.Fatalf("header %s size %d", showHeader(got.Header), got.Size)
			}
			if got.Msg.GetVersion() != req.GetVersion() {
				t.Fatalf("decoded version %d", got.Msg.GetVersion())
			}
			if want, have := req.AppendTo(nil), got.Msg.AppendTo(nil); !bytes.Equal(want, have) {
				t.Fatalf("re-encoded body differs:\n want %x\n have %x", want, have)
			}
		})
	}
}

// TestDecodeRequestEveryKey decodes the empty request of every key and
// version kmsg knows.
func TestDecodeRequestEveryKey(t *testing.T) {
	for key := int16(0); key < 200; key++ {
		proto := requestForKey(key)
		if proto == nil {
			continue
		}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			if key == apiKeyControlledShutdown && v == 0 {
				continue // see TestParseRequestHeaderMatchesClients
			}
			req := versioned(requestForKey(key), v)
			got, err := DecodeRequest(frameOf(1, nil, req))
			if err != nil {
				t.Fatalf("key %d v%d: %v", key, v, err)
			}
			if got.Msg.Key() != key || got.Msg.GetVersion() != v {
				t.Fatalf("key %d v%d decoded as key %d v%d", key, v, got.Msg.Key(), got.Msg.GetVersion())
			}
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	good := frameOf(1, nil, versioned(kmsg.NewPtrMetadataRequest(), 4))
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"too short", good[:6], ErrMalformedHeader},
		{"unknown key", cat(fixedHeader(1000, 0, 1), clientIDBytes(nil)), ErrUnknownAPIKey},
		{"version above kmsg", cat(fixedHeader(3, 100, 1), clientIDBytes(nil), []byte{0, 0, 0, 0}), ErrUnsupportedVersion},
		{"negative version", cat(fixedHeader(3, -1, 1), clientIDBytes(nil), []byte{0, 0, 0, 0}), ErrUnsupportedVersion},
		{"truncated body", cat(fixedHeader(3, 4, 1), clientIDBytes(nil), []byte{0, 0, 0, 5}), ErrMalformedBody},
		{"array longer than the body", cat(fixedHeader(3, 4, 1), clientIDBytes(nil), []byte{0x7f, 0xff, 0xff, 0xff, 0}), ErrMalformedBody},
		{"produce with a tag on every partition", hostileProduce(9, 1000, true), ErrMalformedBody},
		{"produce with many empty partitions", hostileProduce(12, 5000, false), ErrMalformedBody},
		{"produce structure truncated", hostileProduce(9, 10, false)[:40], ErrMalformedBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if req != nil {
				t.Fatalf("got a request with an error")
			}
		})
	}
}

// TestProduceDecodeCost checks the Produce pre-scan against what kmsg
// really allocates, and that real-shaped requests pass it.
func TestProduceDecodeCost(t *testing.T) {
	tests := []struct {
		name   string
		frame  []byte
		reject bool
	}{
		{"v3 one small batch", frameOf(1, nil, produceRequest(3, 1, 1, 61)), false},
		{"v9 many topics of one minimal batch", frameOf(1, nil, produceRequest(9, 500, 1, 61)), false},
		{"v12 many partitions", frameOf(1, nil, produceRequest(12, 4, 250, 200)), false},
		{"v13 topic ids", frameOf(1, strPtr("c"), produceRequest(13, 10, 10, 1000)), false},
		{"v9 tags everywhere", hostileProduce(9, 2000, true), true},
		{"v13 tags everywhere", hostileProduce(13, 2000, true), true},
		{"v12 empty partitions", hostileProduce(12, 2000, false), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr, body, err := ParseRequestHeader(tt.frame)
			if err != nil {
				t.Fatal(err)
			}
			cost, err := produceDecodeCost(body, hdr.APIVersion)
			if err != nil {
				t.Fatal(err)
			}
			msg := versioned(kmsg.NewPtrProduceRequest(), hdr.APIVersion)
			allocated := measureAlloc(func() {
				if err := msg.ReadFrom(body); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("frame %d bytes, estimated cost %d, kmsg allocated %d", len(tt.frame), cost, allocated)
			if !raceEnabled && (cost < allocated/2-1024 || cost > allocated*2+4096) {
				t.Errorf("estimate %d too far from the %d bytes kmsg allocated", cost, allocated)
			}
			err = checkProduceCost(body, hdr.APIVersion, len(tt.frame))
			if rejected := errors.Is(err, ErrMalformedBody); rejected != tt.reject {
				t.Errorf("rejected = %v (%v), want %v", rejected, err, tt.reject)
			}
		})
	}
}
