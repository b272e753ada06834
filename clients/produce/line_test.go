package produce

import (
	"testing"
)

func TestRecord(t *testing.T) {
	opts := Options{Topic: "t", KeySeparator: "::", Partition: -1, Headers: []Header{{"src", "cli"}}}
	tests := []struct {
		line, key, value string
		keyed            bool
	}{
		{"k::v", "k", "v", true},
		{"k::v::w", "k", "v::w", true},
		{"novalue", "", "novalue", false},
		{"::v", "", "v", true},
		{"", "", "", false},
	}
	for _, tt := range tests {
		r := Record([]byte(tt.line), opts)
		if (r.Key != nil) != tt.keyed || string(r.Key) != tt.key || string(r.Value) != tt.value || r.Value == nil {
			t.Errorf("%q: key %q (%v) value %q", tt.line, r.Key, r.Key != nil, r.Value)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "src" || string(r.Headers[0].Value) != "cli" || r.Topic != "t" {
			t.Errorf("%q: %+v", tt.line, r)
		}
	}
	buf := []byte("a:b")
	r := Record(buf, Options{KeySeparator: ":", Partition: 3})
	buf[0], buf[2] = 'x', 'y'
	if string(r.Key) != "a" || string(r.Value) != "b" || r.Partition != 3 {
		t.Errorf("record aliases its line or lost its partition: %+v", r)
	}
}

func TestParseHeader(t *testing.T) {
	if h, err := ParseHeader("k=v=w"); err != nil || h.Key != "k" || h.Value != "v=w" {
		t.Errorf("k=v=w: %+v %v", h, err)
	}
	if h, err := ParseHeader("k="); err != nil || h.Key != "k" || h.Value != "" {
		t.Errorf("k=: %+v %v", h, err)
	}
	for _, bad := range []string{"k", "=v", ""} {
		if _, err := ParseHeader(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
