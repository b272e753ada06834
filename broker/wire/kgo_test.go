package wire

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// miniBroker answers ApiVersions and Metadata, enough for a real client.
type miniBroker struct {
	host string
	port int32

	mu   sync.Mutex
	seen map[int16][]int16 // api key -> versions requested
}

// kgoVersions advertises ApiVersions only up to v4, below what franz-go asks
// first (v5), so the client goes through the KIP-511 fallback.
func kgoVersions(key int16) (int16, int16, bool) {
	switch key {
	case apiKeyApiVersions:
		return 0, 4, true
	case 3: // Metadata
		return 0, kmsg.NewPtrMetadataRequest().MaxVersion(), true
	}
	return 0, 0, false
}

func (b *miniBroker) handle(_ context.Context, req *Request) (kmsg.Response, error) {
	b.mu.Lock()
	b.seen[req.Header.APIKey] = append(b.seen[req.Header.APIKey], req.Header.APIVersion)
	b.mu.Unlock()

	switch msg := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := kmsg.NewPtrApiVersionsResponse()
		for _, key := range []int16{apiKeyApiVersions, 3} {
			minV, maxV, _ := kgoVersions(key)
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = key, minV, maxV
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := kmsg.NewPtrMetadataResponse()
		resp.ClusterID = kmsg.StringPtr("wire-test-cluster")
		resp.ControllerID = 1
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID, broker.Host, broker.Port = 1, b.host, b.port
		resp.Brokers = append(resp.Brokers, broker)
		for _, topic := range msg.Topics {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic = topic.Topic
			t.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("mini broker cannot answer key %d", req.Header.APIKey)
}

func TestFranzGoClient(t *testing.T) {
	var logs logBuffer
	b := &miniBroker{seen: map[int16][]int16{}}
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	s := startServer(t, cfg, kgoVersions, b.handle)
	host, portStr, err := net.SplitHostPort(s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	b.host, b.port = host, int32(port)

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.ClientID("wire-kgo-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()

	// ApiVersions through the client: it first asks at v5, gets the KIP-511
	// answer (header v0 without tags), retries at v4 (flexible request
	// header v2, response header still v0).
	raw, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	av := raw.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || len(av.ApiKeys) != 2 {
		t.Fatalf("ApiVersions response: error %d, keys %+v", av.ErrorCode, av.ApiKeys)
	}
	if !strings.Contains(logs.String(), "answering UNSUPPORTED_VERSION") || !strings.Contains(logs.String(), "version=5") {
		t.Errorf("the client did not go through the KIP-511 fallback; logs:\n%s", logs.String())
	}

	// Metadata at the highest version, flexible on both sides.
	mreq := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	mreq.Topics = append(mreq.Topics, topic)
	raw, err = cl.Request(ctx, mreq)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	md := raw.(*kmsg.MetadataResponse)
	if md.ClusterID == nil || *md.ClusterID != "wire-test-cluster" || len(md.Brokers) != 1 || md.Brokers[0].Port != b.port {
		t.Fatalf("Metadata response: %+v", md)
	}
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 3 {
		t.Fatalf("Metadata topics: %+v", md.Topics)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range b.seen[apiKeyApiVersions] {
		if v != 4 {
			t.Errorf("handler saw ApiVersions v%d; only v4 should reach it", v)
		}
	}
	var flexibleMetadata bool
	for _, v := range b.seen[3] {
		flexibleMetadata = flexibleMetadata || v >= 9
	}
	if !flexibleMetadata {
		t.Errorf("no flexible Metadata request seen: %v", b.seen[3])
	}
	t.Logf("requests seen by key and version: %v", b.seen)
}
