package consume

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFormatter(t *testing.T) {
	r := &kgo.Record{
		Topic: "t", Partition: 2, Offset: 41, Key: []byte("k1"), Value: []byte("hello"),
		Timestamp: time.UnixMilli(1714564800123),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}},
	}
	noKey := &kgo.Record{Topic: "t", Value: []byte("v")}
	tests := []struct {
		format string
		rec    *kgo.Record
		want   string
	}{
		{DefaultFormat, r, "hello\n"},
		{`%t/%p@%o %k=%v %T [%h]\n`, r, "t/2@41 k1=hello 1714564800123 [a=1,b=2]\n"},
		{`%s %S %K %%\t|\\`, r, "hello 5 2 %\t|\\"},
		{`%K:%k:%h`, noKey, "-1::"},
		{`plain`, r, "plain"},
	}
	for _, tt := range tests {
		f, err := NewFormatter(tt.format)
		if err != nil {
			t.Fatalf("%q: %v", tt.format, err)
		}
		if got := string(f.Append(nil, tt.rec)); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.format, got, tt.want)
		}
	}
	for _, bad := range []string{`%x`, `%`, `\`, `\q`} {
		if _, err := NewFormatter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseOffset(t *testing.T) {
	tests := []struct {
		in   string
		want Offset
	}{
		{"start", Offset{Kind: FromStart}},
		{"beginning", Offset{Kind: FromStart}},
		{"end", Offset{Kind: FromEnd}},
		{"42", Offset{Kind: FromOffset, N: 42}},
		{"-10", Offset{Kind: FromRelative, N: 10}},
		{"@1714564800000", Offset{Kind: FromTime, N: 1714564800000}},
		{"s@5", Offset{Kind: FromTime, N: 5}},
	}
	for _, tt := range tests {
		got, err := ParseOffset(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseOffset(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "middle", "@x", "@-1", "1.5"} {
		if _, err := ParseOffset(bad); err == nil {
			t.Errorf("ParseOffset(%q) succeeded", bad)
		}
	}
}

func TestToJSON(t *testing.T) {
	j := ToJSON(&kgo.Record{Topic: "t", Key: []byte{0xff, 0xfe}, Value: []byte("ok"),
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0x80}}}})
	if !j.KeyBase64 || *j.Key != "//4=" || j.ValueBase64 || *j.Value != "ok" || !j.Headers[0].ValueBase64 {
		t.Errorf("%+v", j)
	}
	if j := ToJSON(&kgo.Record{}); j.Key != nil || j.Value != nil {
		t.Errorf("null key and value: %+v", j)
	}
}
