package topic

import (
	"errors"
	"maps"
	"testing"
)

func TestDefaultsFromBroker(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		want    Defaults
		wantErr error
	}{
		{"empty", nil, Defaults{}, nil},
		{"unrelated keys ignored", map[string]string{"node.id": "1", "listeners": "PLAINTEXT://:9092"}, Defaults{}, nil},
		{"direct keys", map[string]string{
			"log.retention.ms":    "3600000",
			"log.segment.bytes":   " 1048576 ",
			"message.max.bytes":   "2097152",
			"log.cleanup.policy":  "compact",
			"compression.type":    "zstd",
			"min.insync.replicas": "2",
		}, Defaults{
			RetentionMs:       "3600000",
			SegmentBytes:      "1048576",
			MaxMessageBytes:   "2097152",
			CleanupPolicy:     "compact",
			CompressionType:   "zstd",
			MinInsyncReplicas: "2",
		}, nil},
		{"retention hours", map[string]string{"log.retention.hours": "168"}, Defaults{RetentionMs: "604800000"}, nil},
		{"retention minutes over hours", map[string]string{"log.retention.minutes": "5", "log.retention.hours": "1"}, Defaults{RetentionMs: "300000"}, nil},
		{"retention ms over minutes", map[string]string{"log.retention.ms": "7", "log.retention.minutes": "5"}, Defaults{RetentionMs: "7"}, nil},
		{"negative retention hours means unlimited", map[string]string{"log.retention.hours": "-5"}, Defaults{RetentionMs: "-1"}, nil},
		{"negative retention ms means unlimited", map[string]string{"log.retention.ms": "-7"}, Defaults{RetentionMs: "-1"}, nil},
		{"roll hours", map[string]string{"log.roll.hours": "24"}, Defaults{SegmentMs: "86400000"}, nil},
		{"roll ms over roll hours", map[string]string{"log.roll.ms": "1000", "log.roll.hours": "24"}, Defaults{SegmentMs: "1000"}, nil},
		{"roll jitter hours", map[string]string{"log.roll.jitter.hours": "1"}, Defaults{SegmentJitterMs: "3600000"}, nil},
		{"flush scheduler interval", map[string]string{"log.flush.scheduler.interval.ms": "500"}, Defaults{FlushMs: "500"}, nil},
		{"flush interval over scheduler", map[string]string{"log.flush.interval.ms": "10", "log.flush.scheduler.interval.ms": "500"}, Defaults{FlushMs: "10"}, nil},
		{"bad segment bytes", map[string]string{"log.segment.bytes": "10"}, nil, ErrInvalidConfig},
		{"bad retention hours", map[string]string{"log.retention.hours": "a week"}, nil, ErrInvalidConfig},
		{"retention hours overflow int", map[string]string{"log.retention.hours": "2147483648"}, nil, ErrInvalidConfig},
		{"roll hours zero", map[string]string{"log.roll.hours": "0"}, nil, ErrInvalidConfig},
		{"roll jitter hours negative", map[string]string{"log.roll.jitter.hours": "-1"}, nil, ErrInvalidConfig},
		{"compaction lag conflict", map[string]string{"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"}, nil, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultsFromBroker(tt.props)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("DefaultsFromBroker = %v, %v; want error %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Fatalf("DefaultsFromBroker = %v, %v; want %v", got, err, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("result does not validate: %v", err)
			}
		})
	}
}

func TestDefaultsFromBrokerEveryKey(t *testing.T) {
	// Every topic config's broker key is read, with its value carried over.
	props := map[string]string{}
	for _, d := range Defs() {
		props[d.BrokerKey] = d.Default
	}
	got, err := DefaultsFromBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Defs() {
		if got[d.Name] != d.Default {
			t.Errorf("%s from %s: %q, want %q", d.Name, d.BrokerKey, got[d.Name], d.Default)
		}
	}
}
