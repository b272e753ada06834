package admin

import (
	"testing"
	"time"
)

func TestParseSeekTarget(t *testing.T) {
	tests := []struct {
		in   string
		want SeekTarget
	}{
		{"start", SeekTarget{Kind: SeekStart}},
		{"earliest", SeekTarget{Kind: SeekStart}},
		{"end", SeekTarget{Kind: SeekEnd}},
		{"0", SeekTarget{Kind: SeekOffset}},
		{"1234", SeekTarget{Kind: SeekOffset, Offset: 1234}},
		{"@1714564800000", SeekTarget{Kind: SeekTime, Time: time.UnixMilli(1714564800000)}},
		{"2024-05-01T12:00:00Z", SeekTarget{Kind: SeekTime, Time: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		got, err := ParseSeekTarget(tt.in)
		if err != nil || got.Kind != tt.want.Kind || got.Offset != tt.want.Offset || !got.Time.Equal(tt.want.Time) {
			t.Errorf("ParseSeekTarget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-1", "@x", "yesterday", "2024-05-01"} {
		if _, err := ParseSeekTarget(bad); err == nil {
			t.Errorf("ParseSeekTarget(%q) succeeded", bad)
		}
	}
}
