package wire

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedFrames are valid frames of several keys and versions, and crafted
// hostile ones, shared by the fuzz targets.
func seedFrames() [][]byte {
	var frames [][]byte
	add := func(req kmsg.Request, versions ...int16) {
		for _, v := range versions {
			frames = append(frames, frameOf(int32(len(frames)), strPtr("seed"), versioned(req, v)))
		}
	}
	add(produceRequest(0, 1, 1, 70), 0, 3, 7, 9, 12, 13)
	add(produceRequest(0, 3, 4, 10), 8, 11)

	md := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, topic)
	add(md, 0, 1, 4, 9, 12, 13)

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "seed", "1"
	add(av, 0, 2, 3, 4)

	fetch := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	add(fetch, 4, 11, 12, 16)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", []byte{0, 1, 2}
	join.Protocols = append(join.Protocols, proto)
	add(join, 1, 5, 6, 9)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "orders"
	ct.Partitions = append(ct.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
	commit.Topics = append(commit.Topics, ct)
	add(commit, 2, 8, 9)

	create := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "new", 3, 1
	create.Topics = append(create.Topics, ctt)
	add(create, 2, 5, 7)

	add(kmsg.NewPtrFindCoordinatorRequest(), 0, 3, 4)
	add(kmsg.NewPtrHeartbeatRequest(), 0, 4)
	add(kmsg.NewPtrInitProducerIDRequest(), 1, 4, 5)

	frames = append(frames,
		cat(fixedHeader(18, 127, 1), clientIDBytes(strPtr("future")), []byte{0}),
		cat(fixedHeader(3, 9, 1), clientIDBytes(nil), []byte{2, 0, 1, 'x', 7, 0}, []byte{1, 0, 0}),
		cat(fixedHeader(7, 0, 1), []byte{0, 0, 0, 1}),
		hostileProduce(9, 200, true),
		hostileProduce(12, 200, false),
		hostileMetadata(9, 1000),
		hostileMetadata(12, 500),
	)
	return frames
}

// hostileMetadata hand-builds a flexible Metadata request of n topics, each
// an empty name and one tagged field: about as many allocated bytes per
// frame byte as kmsg can be made to spend.
func hostileMetadata(version int16, n int) []byte {
	b := cat(fixedHeader(3, version, 1), clientIDBytes(nil), []byte{0})
	b = binary.AppendUvarint(b, uint64(n+1))
	for range n {
		if version >= 10 {
			b = append(b, make([]byte, 16)...) // topic id
		}
		b = append(b, 1)       // empty name
		b = append(b, 1, 0, 0) // one tag, key 0, no data
	}
	b = append(b, 0) // allow auto topic creation
	if version <= 10 {
		b = append(b, 0) // include cluster authorized operations
	}
	return append(b, 0, 0) // include topic authorized operations, tags
}

func FuzzParseRequestHeader(f *testing.F) {
	for _, frame := range seedFrames() {
		f.Add(frame)
	}
	f.Add([]byte{})
	f.Add(fixedHeader(3, 9, 1))
	f.Fuzz(func(t *testing.T, frame []byte) {
		hdr, body, err := ParseRequestHeader(frame)
		if err != nil {
			return
		}
		if len(frame) < minFrameSize || len(body) > len(frame)-minFrameSize {
			t.Fatalf("body of %d bytes from a %d-byte frame", len(body), len(frame))
		}
		if !bytes.HasSuffix(frame, body) {
			t.Fatal("body is not the end of the frame")
		}
		if hdr.APIKey != int16(binary.BigEndian.Uint16(frame)) ||
			hdr.APIVersion != int16(binary.BigEndian.Uint16(frame[2:])) ||
			hdr.CorrelationID != int32(binary.BigEndian.Uint32(frame[4:])) {
			t.Fatalf("fixed fields %+v do not match the frame", hdr)
		}
		if hdr.ClientID != nil && len(*hdr.ClientID) > len(frame) {
			t.Fatal("client id longer than the frame")
		}
	})
}

// heapAllocs reads the cumulative heap allocation counter without stopping
// the world. It counts small-object spans when they are handed out, so it
// over-reports by at most a span per size class: slack, never a miss.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocSlack absorbs heapAllocs' over-reporting and fixed costs.
const allocSlack = 1 << 20

func FuzzDecodeRequest(f *testing.F) {
	for _, frame := range seedFrames() {
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		before := heapAllocs()
		req, err := DecodeRequest(frame)
		allocated := int64(heapAllocs() - before)

		// Memory: what the server charges must cover what decoding took.
		limit := int64(len(frame))*decodeAmplification + allocSlack
		if len(frame) >= 2 && int16(binary.BigEndian.Uint16(frame)) == apiKeyProduce {
			limit = int64(len(frame))*(produceCostFactor+1) + produceCostSlack + allocSlack
		}
		if allocated > limit {
			t.Fatalf("decoding a %d-byte frame allocated %d bytes (limit %d)", len(frame), allocated, limit)
		}
		if err != nil {
			return
		}
		if req.Msg.Key() != req.Header.APIKey || req.Msg.GetVersion() != req.Header.APIVersion {
			t.Fatalf("decoded key %d v%d for header %s", req.Msg.Key(), req.Msg.GetVersion(), showHeader(req.Header))
		}
		// What decodes re-encodes, and that encoding is stable.
		enc := req.Msg.AppendTo(nil)
		again := versioned(kmsg.RequestForKey(req.Header.APIKey), req.Header.APIVersion)
		if err := again.ReadFrom(enc); err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if !bytes.Equal(again.AppendTo(nil), enc) {
			t.Fatal("encoding is not stable")
		}
	})
}

// FuzzServeStream feeds arbitrary bytes to a live connection: framing,
// caps, version checks, the KIP-511 answer and teardown must neither panic
// nor hang nor leak budget.
func FuzzServeStream(f *testing.F) {
	for _, frame := range seedFrames() {
		f.Add(sized(frame))
	}
	f.Add(append(sized(heartbeat(1, nil, 4)), sized(produceFrame(2, 9, 0, 10))...))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 3})

	cfg := Config{
		MaxRequestBytes: 1 << 20, MaxOtherBytes: 64 << 10, MaxInFlightBytes: 16 << 20,
		MaxInFlightPerConn: 4, ReadTimeout: time.Second, WriteTimeout: time.Second,
		Logger: testLogger(),
	}
	s := NewServer(cfg, allVersions, answerAll)
	defer s.Close()

	f.Fuzz(func(t *testing.T, input []byte) {
		client, server := net.Pipe()
		c := s.track(server, &boundListener{Listener: Listener{Name: DefaultListenerName}})
		served := make(chan struct{})
		go func() {
			defer close(served)
			c.serve()
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(ioTimeout))
		_, _ = client.Write(input)
		_ = client.Close()
		select {
		case <-served:
		case <-time.After(ioTimeout):
			t.Fatal("connection did not finish")
		}
		waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
		if n := s.ConnCount(); n != 0 {
			t.Fatalf("%d connections left", n)
		}
	})
}
