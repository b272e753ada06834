package topic

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateConfigs(t *testing.T) {
	tests := []struct {
		name    string
		cfgs    map[string]string
		wantErr error // nil: valid
	}{
		{"nil", nil, nil},
		{"empty", map[string]string{}, nil},
		{"unknown key", map[string]string{"retention.hours": "1"}, ErrUnknownConfig},
		{"broker key is not a topic key", map[string]string{"log.retention.ms": "1"}, ErrUnknownConfig},
		{"tiered storage not supported", map[string]string{"remote.storage.enable": "true"}, ErrUnknownConfig},
		{"empty key", map[string]string{"": "1"}, ErrUnknownConfig},

		// long, with lower bounds
		{"retention.ms -1 unlimited", map[string]string{RetentionMs: "-1"}, nil},
		{"retention.ms 0", map[string]string{RetentionMs: "0"}, nil},
		{"retention.ms -2", map[string]string{RetentionMs: "-2"}, ErrInvalidConfig},
		{"retention.ms max long", map[string]string{RetentionMs: "9223372036854775807"}, nil},
		{"retention.ms overflow", map[string]string{RetentionMs: "9223372036854775808"}, ErrInvalidConfig},
		{"retention.ms not a number", map[string]string{RetentionMs: "7d"}, ErrInvalidConfig},
		{"retention.ms float", map[string]string{RetentionMs: "1.0"}, ErrInvalidConfig},
		{"retention.ms empty", map[string]string{RetentionMs: ""}, ErrInvalidConfig},
		{"retention.ms spaces trimmed", map[string]string{RetentionMs: " 3600000 "}, nil},
		{"retention.ms plus sign", map[string]string{RetentionMs: "+5"}, nil},
		{"retention.bytes any negative", map[string]string{RetentionBytes: "-100"}, nil},
		{"retention.bytes min long", map[string]string{RetentionBytes: "-9223372036854775808"}, nil},
		{"segment.ms 1", map[string]string{SegmentMs: "1"}, nil},
		{"segment.ms 0", map[string]string{SegmentMs: "0"}, ErrInvalidConfig},
		{"segment.jitter.ms 0", map[string]string{SegmentJitterMs: "0"}, nil},
		{"segment.jitter.ms -1", map[string]string{SegmentJitterMs: "-1"}, ErrInvalidConfig},
		{"delete.retention.ms -1", map[string]string{DeleteRetentionMs: "-1"}, ErrInvalidConfig},
		{"file.delete.delay.ms 0", map[string]string{FileDeleteDelayMs: "0"}, nil},
		{"file.delete.delay.ms -1", map[string]string{FileDeleteDelayMs: "-1"}, ErrInvalidConfig},
		{"flush.messages 1", map[string]string{FlushMessages: "1"}, nil},
		{"flush.messages 0", map[string]string{FlushMessages: "0"}, ErrInvalidConfig},
		{"flush.ms 0", map[string]string{FlushMs: "0"}, nil},
		{"flush.ms -1", map[string]string{FlushMs: "-1"}, ErrInvalidConfig},
		{"max.compaction.lag.ms 1", map[string]string{MaxCompactionLagMs: "1"}, nil},
		{"max.compaction.lag.ms 0", map[string]string{MaxCompactionLagMs: "0"}, ErrInvalidConfig},
		{"min.compaction.lag.ms -1", map[string]string{MinCompactionLagMs: "-1"}, ErrInvalidConfig},
		{"message.timestamp.before.max.ms 0", map[string]string{MessageTimestampBeforeMaxMs: "0"}, nil},
		{"message.timestamp.before.max.ms -1", map[string]string{MessageTimestampBeforeMaxMs: "-1"}, ErrInvalidConfig},
		{"message.timestamp.after.max.ms -1", map[string]string{MessageTimestampAfterMaxMs: "-1"}, ErrInvalidConfig},
		{"message.timestamp.difference.max.ms -1", map[string]string{MessageTimestampDifferenceMaxMs: "-1"}, ErrInvalidConfig},

		// int
		{"segment.bytes 14", map[string]string{SegmentBytes: "14"}, nil},
		{"segment.bytes 13", map[string]string{SegmentBytes: "13"}, ErrInvalidConfig},
		{"segment.bytes max int", map[string]string{SegmentBytes: "2147483647"}, nil},
		{"segment.bytes over int", map[string]string{SegmentBytes: "2147483648"}, ErrInvalidConfig},
		{"segment.index.bytes 4", map[string]string{SegmentIndexBytes: "4"}, nil},
		{"segment.index.bytes 3", map[string]string{SegmentIndexBytes: "3"}, ErrInvalidConfig},
		{"index.interval.bytes 0", map[string]string{IndexIntervalBytes: "0"}, nil},
		{"index.interval.bytes -1", map[string]string{IndexIntervalBytes: "-1"}, ErrInvalidConfig},
		{"max.message.bytes 0", map[string]string{MaxMessageBytes: "0"}, nil},
		{"max.message.bytes -1", map[string]string{MaxMessageBytes: "-1"}, ErrInvalidConfig},
		{"min.insync.replicas 1", map[string]string{MinInsyncReplicas: "1"}, nil},
		{"min.insync.replicas 0", map[string]string{MinInsyncReplicas: "0"}, ErrInvalidConfig},
		{"gzip level -1", map[string]string{CompressionGzipLevel: "-1"}, nil},
		{"gzip level 1", map[string]string{CompressionGzipLevel: "1"}, nil},
		{"gzip level 9", map[string]string{CompressionGzipLevel: "9"}, nil},
		{"gzip level 0", map[string]string{CompressionGzipLevel: "0"}, ErrInvalidConfig},
		{"gzip level 10", map[string]string{CompressionGzipLevel: "10"}, ErrInvalidConfig},
		{"gzip level -2", map[string]string{CompressionGzipLevel: "-2"}, ErrInvalidConfig},
		{"lz4 level 1", map[string]string{CompressionLz4Level: "1"}, nil},
		{"lz4 level 17", map[string]string{CompressionLz4Level: "17"}, nil},
		{"lz4 level 0", map[string]string{CompressionLz4Level: "0"}, ErrInvalidConfig},
		{"lz4 level 18", map[string]string{CompressionLz4Level: "18"}, ErrInvalidConfig},
		{"zstd level -131072", map[string]string{CompressionZstdLevel: "-131072"}, nil},
		{"zstd level 22", map[string]string{CompressionZstdLevel: "22"}, nil},
		{"zstd level -131073", map[string]string{CompressionZstdLevel: "-131073"}, ErrInvalidConfig},
		{"zstd level 23", map[string]string{CompressionZstdLevel: "23"}, ErrInvalidConfig},

		// double
		{"dirty ratio 0", map[string]string{MinCleanableDirtyRatio: "0"}, nil},
		{"dirty ratio 1", map[string]string{MinCleanableDirtyRatio: "1"}, nil},
		{"dirty ratio 0.25", map[string]string{MinCleanableDirtyRatio: "0.25"}, nil},
		{"dirty ratio exponent", map[string]string{MinCleanableDirtyRatio: "5e-1"}, nil},
		{"dirty ratio above 1", map[string]string{MinCleanableDirtyRatio: "1.01"}, ErrInvalidConfig},
		{"dirty ratio negative", map[string]string{MinCleanableDirtyRatio: "-0.1"}, ErrInvalidConfig},
		{"dirty ratio NaN", map[string]string{MinCleanableDirtyRatio: "NaN"}, ErrInvalidConfig},
		{"dirty ratio text", map[string]string{MinCleanableDirtyRatio: "half"}, ErrInvalidConfig},

		// boolean
		{"preallocate true", map[string]string{Preallocate: "true"}, nil},
		{"preallocate FALSE", map[string]string{Preallocate: "FALSE"}, nil},
		{"preallocate True", map[string]string{Preallocate: "True"}, nil},
		{"preallocate 1", map[string]string{Preallocate: "1"}, ErrInvalidConfig},
		{"preallocate yes", map[string]string{Preallocate: "yes"}, ErrInvalidConfig},
		{"unclean election false", map[string]string{UncleanLeaderElectionEnable: "false"}, nil},
		{"downconversion enable empty", map[string]string{MessageDownconversionEnable: ""}, ErrInvalidConfig},

		// string enums
		{"compression producer", map[string]string{CompressionType: "producer"}, nil},
		{"compression uncompressed", map[string]string{CompressionType: "uncompressed"}, nil},
		{"compression zstd", map[string]string{CompressionType: "zstd"}, nil},
		{"compression lz4", map[string]string{CompressionType: "lz4"}, nil},
		{"compression snappy", map[string]string{CompressionType: "snappy"}, nil},
		{"compression gzip", map[string]string{CompressionType: "gzip"}, nil},
		{"compression none", map[string]string{CompressionType: "none"}, ErrInvalidConfig},
		{"compression case-sensitive", map[string]string{CompressionType: "GZIP"}, ErrInvalidConfig},
		{"timestamp CreateTime", map[string]string{MessageTimestampType: "CreateTime"}, nil},
		{"timestamp LogAppendTime", map[string]string{MessageTimestampType: "LogAppendTime"}, nil},
		{"timestamp lower case", map[string]string{MessageTimestampType: "createtime"}, ErrInvalidConfig},

		// list
		{"cleanup delete", map[string]string{CleanupPolicy: "delete"}, nil},
		{"cleanup compact", map[string]string{CleanupPolicy: "compact"}, nil},
		{"cleanup compact,delete", map[string]string{CleanupPolicy: "compact,delete"}, nil},
		{"cleanup delete, compact", map[string]string{CleanupPolicy: "delete, compact"}, nil},
		{"cleanup empty", map[string]string{CleanupPolicy: ""}, ErrInvalidConfig},
		{"cleanup trailing comma", map[string]string{CleanupPolicy: "delete,"}, ErrInvalidConfig},
		{"cleanup unknown", map[string]string{CleanupPolicy: "archive"}, ErrInvalidConfig},
		{"cleanup mixed", map[string]string{CleanupPolicy: "compact,archive"}, ErrInvalidConfig},

		// several keys and cross-key checks
		{"several valid", map[string]string{RetentionMs: "1000", SegmentBytes: "1048576", CleanupPolicy: "compact"}, nil},
		{"one bad among valid", map[string]string{RetentionMs: "1000", SegmentBytes: "1"}, ErrInvalidConfig},
		{"compaction lags equal", map[string]string{MinCompactionLagMs: "5", MaxCompactionLagMs: "5"}, nil},
		{"min lag above max lag", map[string]string{MinCompactionLagMs: "10", MaxCompactionLagMs: "5"}, ErrInvalidConfig},
		{"min lag above default max lag", map[string]string{MinCompactionLagMs: "9223372036854775807"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateConfigs(tt.cfgs)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ValidateConfigs(%v) = %v, want nil", tt.cfgs, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ValidateConfigs(%v) = %v, want %v", tt.cfgs, err, tt.wantErr)
			}
		})
	}
}

func TestValidateConfigsMessages(t *testing.T) {
	tests := []struct {
		cfgs map[string]string
		want []string
	}{
		{map[string]string{"no.such": "1"}, []string{"no.such"}},
		{map[string]string{SegmentBytes: "13"}, []string{"segment.bytes", `"13"`, "at least 14"}},
		{map[string]string{CompressionType: "brotli"}, []string{"compression.type", `"brotli"`, "gzip"}},
		{map[string]string{MinCompactionLagMs: "10", MaxCompactionLagMs: "5"}, []string{"min.compaction.lag.ms=10", "max.compaction.lag.ms=5"}},
		// The first bad key in sorted order is reported, whatever the map order.
		{map[string]string{SegmentMs: "0", RetentionMs: "x", "zzz": "1"}, []string{"retention.ms"}},
	}
	for _, tt := range tests {
		err := ValidateConfigs(tt.cfgs)
		if err == nil {
			t.Errorf("ValidateConfigs(%v) = nil", tt.cfgs)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidateConfigs(%v) = %q, want it to contain %q", tt.cfgs, err, w)
			}
		}
	}
	huge := strings.Repeat("9", 100_000)
	if err := ValidateConfigs(map[string]string{RetentionMs: huge}); err == nil || len(err.Error()) > 300 {
		t.Errorf("error for a huge value is not bounded: %d bytes", len(err.Error()))
	}
}

func TestValidateWithDefaults(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		d         Defaults
		wantErr   error
	}{
		{"no conflict", map[string]string{MinCompactionLagMs: "10"}, Defaults{MaxCompactionLagMs: "100"}, nil},
		{"override above broker max lag", map[string]string{MinCompactionLagMs: "1000"}, Defaults{MaxCompactionLagMs: "100"}, ErrInvalidConfig},
		{"override fixes broker conflict", map[string]string{MaxCompactionLagMs: "1000"}, Defaults{MinCompactionLagMs: "500", MaxCompactionLagMs: "100"}, nil},
		{"bad override", map[string]string{SegmentMs: "0"}, nil, ErrInvalidConfig},
		{"unknown override", map[string]string{"x": "0"}, Defaults{}, ErrUnknownConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.overrides, tt.d)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Validate = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
