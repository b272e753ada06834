package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/metrics"
)

func TestErrorCodes(t *testing.T) {
	produce := kmsg.NewPtrProduceResponse()
	produce.Topics = []kmsg.ProduceResponseTopic{{Topic: "a", Partitions: []kmsg.ProduceResponseTopicPartition{
		{Partition: 0, ErrorCode: 6}, {Partition: 1}, {Partition: 2, ErrorCode: 6},
	}}}
	meta := kmsg.NewPtrMetadataResponse()
	meta.Topics = []kmsg.MetadataResponseTopic{{ErrorCode: 3}, {ErrorCode: 0}}
	commit := kmsg.NewPtrOffsetCommitResponse()
	commit.Topics = []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{ErrorCode: 27}}}}
	api := kmsg.NewPtrApiVersionsResponse()
	api.ErrorCode = 35
	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{ErrorCode: 1}}}}
	tests := []struct {
		name string
		resp kmsg.Response
		want map[int16]int
	}{
		{"produce", produce, map[int16]int{6: 2}},
		{"metadata by reflection", meta, map[int16]int{3: 1}},
		{"nested by reflection", commit, map[int16]int{27: 1}},
		{"top level", api, map[int16]int{35: 1}},
		{"fetch", fetch, map[int16]int{1: 1}},
		{"clean", kmsg.NewPtrMetadataResponse(), nil},
	}
	for _, tt := range tests {
		got := errorCodes(tt.resp)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for c, n := range tt.want {
			if got[c] != n {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
	}
	desc, names := describeCodes(map[int16]int{6: 2, 3: 1})
	if desc != "UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_FOR_PARTITION x2" && desc != "UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER x2" {
		t.Errorf("describe: %q", desc)
	}
	if strings.Contains(names, "x2") {
		t.Errorf("names %q", names)
	}
	levels := []struct {
		codes map[int16]int
		want  slog.Level
	}{
		{map[int16]int{6: 2, 3: 1}, slog.LevelInfo},   // retriable
		{map[int16]int{36: 1}, slog.LevelWarn},        // TOPIC_ALREADY_EXISTS
		{map[int16]int{79: 1}, slog.LevelDebug},       // MEMBER_ID_REQUIRED
		{map[int16]int{79: 1, 36: 1}, slog.LevelWarn}, // mixed
		{map[int16]int{27: 1, 6: 1}, slog.LevelInfo},  // REBALANCE_IN_PROGRESS and a retriable one
	}
	for _, l := range levels {
		if got := codesLevel(l.codes); got != l.want {
			t.Errorf("codesLevel(%v) = %v, want %v", l.codes, got, l.want)
		}
	}
}

func TestLogLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLogLimiter(10*time.Second, 2)
	l.now = func() time.Time { return now }
	allowed := 0
	for range 5 {
		if ok, _ := l.allow("a"); ok {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("allowed %d of 5 in one window, want 2", allowed)
	}
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("another key is limited separately")
	}
	now = now.Add(11 * time.Second)
	ok, suppressed := l.allow("a")
	if !ok || suppressed != 3 {
		t.Fatalf("next window: ok %v suppressed %d, want true 3", ok, suppressed)
	}
}

func TestInstrumentLogsRequestErrors(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	m := metrics.New(metrics.Options{Version: "test"})
	fail := false
	h := func(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
		if fail {
			return nil, errors.New("boom")
		}
		r := kmsg.NewPtrMetadataResponse()
		r.Topics = []kmsg.MetadataResponseTopic{{ErrorCode: 3}}
		return r, nil
	}
	wrapped := instrument(h, m, logger, newLogLimiter(time.Minute, 3))
	client := "test-client"
	req := &wire.Request{
		Header:     wire.RequestHeader{APIKey: int16(kmsg.Metadata), APIVersion: 12, CorrelationID: 9, ClientID: &client},
		Msg:        kmsg.NewPtrMetadataRequest(),
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 4567},
	}
	for range 10 {
		if _, err := wrapped(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("logged %d lines for 10 identical errors, want 3 (rate limit):\n%s", len(lines), logs.String())
	}
	for _, w := range []string{"api=Metadata", "client_id=test-client", "addr=10.1.2.3:4567", "UNKNOWN_TOPIC_OR_PARTITION", "level=INFO"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("log line %q lacks %q", lines[0], w)
		}
	}
	logs.Reset()
	fail = true
	if _, err := wrapped(context.Background(), req); err == nil {
		t.Fatal("handler error was swallowed")
	}
	if !strings.Contains(logs.String(), "err=boom") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("handler error log: %q", logs.String())
	}
}
