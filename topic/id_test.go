package topic

import (
	"strings"
	"testing"
)

func TestNewID(t *testing.T) {
	seen := make(map[[16]byte]bool)
	for range 10_000 {
		id := NewID()
		if id == ([16]byte{}) {
			t.Fatal("NewID returned the zero ID")
		}
		if v := id[6] >> 4; v != 4 {
			t.Fatalf("NewID %x: version %d, want 4", id, v)
		}
		if id[8]&0xc0 != 0x80 {
			t.Fatalf("NewID %x: variant bits %b, want 10", id, id[8]>>6)
		}
		if s := FormatID(id); strings.HasPrefix(s, "-") {
			t.Fatalf("NewID %x formats as %q, starting with '-'", id, s)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %x", id)
		}
		seen[id] = true
	}
}

func TestFormatParseID(t *testing.T) {
	tests := []struct {
		id  [16]byte
		str string
	}{
		// Kafka's Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID.
		{[16]byte{}, "AAAAAAAAAAAAAAAAAAAAAA"},
		{[16]byte{15: 1}, "AAAAAAAAAAAAAAAAAAAAAQ"},
		{[16]byte{0: 0xff, 15: 0xff}, "_wAAAAAAAAAAAAAAAAAA_w"},
	}
	for _, tt := range tests {
		if got := FormatID(tt.id); got != tt.str {
			t.Errorf("FormatID(%x) = %q, want %q", tt.id, got, tt.str)
		}
		for _, in := range []string{tt.str, tt.str + "=="} {
			got, err := ParseID(in)
			if err != nil || got != tt.id {
				t.Errorf("ParseID(%q) = %x, %v; want %x", in, got, err, tt.id)
			}
		}
	}
	id := NewID()
	if got, err := ParseID(FormatID(id)); err != nil || got != id {
		t.Errorf("round trip of %x: %x, %v", id, got, err)
	}
}

func TestParseIDErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"AAAA",
		"AAAAAAAAAAAAAAAAAAAAA",   // 21 chars
		"AAAAAAAAAAAAAAAAAAAAAAA", // 23 chars
		"AAAAAAAAAAAAAAAAAAAA+/",  // standard, not URL-safe, alphabet
		"AAAAAAAAAAAAAAAAAAAA A",
		"00000000-0000-0000-0000-000000000000",
	} {
		if _, err := ParseID(in); err == nil {
			t.Errorf("ParseID(%q) = nil error", in)
		}
	}
}
