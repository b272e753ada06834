package topic

import (
	"math"
	"testing"
)

func TestCleanupPolicy(t *testing.T) {
	tests := []struct {
		policy                  string
		wantCompact, wantDelete bool
	}{
		{"", false, true}, // no override: Kafka's default, delete
		{"delete", false, true},
		{"compact", true, false},
		{"compact,delete", true, true},
		{"delete, compact", true, true},
	}
	for _, tt := range tests {
		var over map[string]string
		if tt.policy != "" {
			over = map[string]string{CleanupPolicy: tt.policy}
		}
		r := Resolve(over, nil)
		if r.Compact() != tt.wantCompact || r.Delete() != tt.wantDelete {
			t.Errorf("cleanup.policy %q: Compact=%v Delete=%v", tt.policy, r.Compact(), r.Delete())
		}
	}
}

func TestLogAppendTime(t *testing.T) {
	if Resolve(nil, nil).LogAppendTime() {
		t.Error("default is CreateTime")
	}
	if !Resolve(nil, Defaults{MessageTimestampType: "LogAppendTime"}).LogAppendTime() {
		t.Error("broker default LogAppendTime not seen")
	}
}

func TestTimestampBounds(t *testing.T) {
	tests := []struct {
		name                  string
		cfgs                  map[string]string
		wantBefore, wantAfter int64
	}{
		{"defaults", nil, math.MaxInt64, math.MaxInt64},
		{"explicit", map[string]string{MessageTimestampBeforeMaxMs: "10", MessageTimestampAfterMaxMs: "20"}, 10, 20},
		{"deprecated fills both", map[string]string{MessageTimestampDifferenceMaxMs: "30"}, 30, 30},
		{"explicit wins over deprecated", map[string]string{MessageTimestampDifferenceMaxMs: "30", MessageTimestampAfterMaxMs: "5"}, 30, 5},
	}
	for _, tt := range tests {
		r := Resolve(tt.cfgs, nil)
		if b, a := r.TimestampBeforeMaxMs(), r.TimestampAfterMaxMs(); b != tt.wantBefore || a != tt.wantAfter {
			t.Errorf("%s: before=%d after=%d, want %d %d", tt.name, b, a, tt.wantBefore, tt.wantAfter)
		}
	}
}
