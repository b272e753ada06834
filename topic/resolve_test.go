package topic

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestResolvePrecedence(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		d         Defaults
		key       string
		want      string
		wantSrc   Source
	}{
		{"Kafka default", nil, nil, RetentionMs, "604800000", Default},
		{"broker default", nil, Defaults{RetentionMs: "3600000"}, RetentionMs, "3600000", StaticBroker},
		{"override over broker", map[string]string{RetentionMs: "1000"}, Defaults{RetentionMs: "3600000"}, RetentionMs, "1000", DynamicTopic},
		{"override over Kafka default", map[string]string{RetentionMs: "-1"}, nil, RetentionMs, "-1", DynamicTopic},
		{"other key untouched", map[string]string{RetentionMs: "1000"}, Defaults{RetentionMs: "5"}, SegmentBytes, "1073741824", Default},
		{"override trimmed", map[string]string{SegmentBytes: " 1048576 "}, nil, SegmentBytes, "1048576", DynamicTopic},
		{"invalid override falls to broker", map[string]string{RetentionMs: "-5"}, Defaults{RetentionMs: "3600000"}, RetentionMs, "3600000", StaticBroker},
		{"invalid override falls to Kafka", map[string]string{SegmentMs: "0"}, nil, SegmentMs, "604800000", Default},
		{"invalid broker falls to Kafka", nil, Defaults{CleanupPolicy: "archive"}, CleanupPolicy, "delete", Default},
		{"unknown key", map[string]string{"x.y": "1"}, Defaults{"x.y": "2"}, "x.y", "", SourceUnknown},
		{"broker key is not a topic key", nil, Defaults{"log.retention.ms": "1"}, RetentionMs, "604800000", Default},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, src := Resolve(tt.overrides, tt.d).Get(tt.key)
			if v != tt.want || src != tt.wantSrc {
				t.Fatalf("Get(%s) = %q, %v; want %q, %v", tt.key, v, src, tt.want, tt.wantSrc)
			}
		})
	}
}

func TestResolveCopies(t *testing.T) {
	over := map[string]string{RetentionMs: "1000"}
	d := Defaults{SegmentMs: "2000"}
	r := Resolve(over, d)
	over[RetentionMs] = "9"
	d[SegmentMs] = "9"
	if r.Int64(RetentionMs) != 1000 || r.Int64(SegmentMs) != 2000 {
		t.Fatal("Resolved changed when the caller's maps did")
	}
	got := r.Overrides()
	got[RetentionMs] = "7"
	if r.Int64(RetentionMs) != 1000 {
		t.Fatal("Overrides() shares its map")
	}
}

func TestResolvedZeroValue(t *testing.T) {
	var r Resolved
	for _, d := range Defs() {
		v, src := r.Get(d.Name)
		if v != d.Default || src != Default {
			t.Errorf("zero Resolved: Get(%s) = %q, %v", d.Name, v, src)
		}
	}
	if r.Overrides() != nil {
		t.Error("zero Resolved has overrides")
	}
}

func TestTypedGetters(t *testing.T) {
	r := Resolve(map[string]string{
		SegmentBytes:           "1048576",
		RetentionMs:            "-1",
		Preallocate:            "TRUE",
		MinCleanableDirtyRatio: "0.75",
		CompressionType:        "zstd",
		CleanupPolicy:          "compact , delete",
	}, Defaults{MaxMessageBytes: "2097152"})
	if got := r.Int32(SegmentBytes); got != 1048576 {
		t.Errorf("Int32(segment.bytes) = %d", got)
	}
	if got := r.Int64(SegmentBytes); got != 1048576 {
		t.Errorf("Int64(segment.bytes) = %d", got)
	}
	if got := r.Int64(RetentionMs); got != -1 {
		t.Errorf("Int64(retention.ms) = %d", got)
	}
	if got := r.Int32(MaxMessageBytes); got != 2097152 {
		t.Errorf("Int32(max.message.bytes) = %d", got)
	}
	if got := r.Int64(FlushMessages); got != math.MaxInt64 {
		t.Errorf("Int64(flush.messages) = %d", got)
	}
	if !r.Bool(Preallocate) || r.Bool(UncleanLeaderElectionEnable) || !r.Bool(MessageDownconversionEnable) {
		t.Error("Bool getters wrong")
	}
	if got := r.Float64(MinCleanableDirtyRatio); got != 0.75 {
		t.Errorf("Float64(min.cleanable.dirty.ratio) = %g", got)
	}
	if got := r.String(CompressionType); got != "zstd" {
		t.Errorf("String(compression.type) = %q", got)
	}
	if got := r.List(CleanupPolicy); !slices.Equal(got, []string{"compact", "delete"}) {
		t.Errorf("List(cleanup.policy) = %q", got)
	}
	// Every default parses with the getter of its type.
	var zero Resolved
	for _, d := range Defs() {
		switch d.Type {
		case Int:
			zero.Int32(d.Name)
		case Long:
			zero.Int64(d.Name)
		case Boolean:
			zero.Bool(d.Name)
		case Double:
			zero.Float64(d.Name)
		case String:
			zero.String(d.Name)
		case List:
			zero.List(d.Name)
		}
	}
}

func TestTypedGettersPanicOnMisuse(t *testing.T) {
	var r Resolved
	tests := []struct {
		name string
		call func()
	}{
		{"unknown name", func() { r.Int64("retention.m") }},
		{"Int32 of a long", func() { r.Int32(RetentionMs) }},
		{"Int64 of a boolean", func() { r.Int64(Preallocate) }},
		{"Bool of a string", func() { r.Bool(CompressionType) }},
		{"Float64 of an int", func() { r.Float64(SegmentBytes) }},
		{"String of a list", func() { r.String(CleanupPolicy) }},
		{"List of a string", func() { r.List(CompressionType) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.call()
		})
	}
}

func TestSynonyms(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		d         Defaults
		key       string
		want      []Synonym
	}{
		{"all three", map[string]string{RetentionMs: "1000"}, Defaults{RetentionMs: "2000"}, RetentionMs, []Synonym{
			{RetentionMs, "1000", DynamicTopic},
			{"log.retention.ms", "2000", StaticBroker},
			{"log.retention.ms", "604800000", Default},
		}},
		{"broker only", nil, Defaults{MaxMessageBytes: "10"}, MaxMessageBytes, []Synonym{
			{"message.max.bytes", "10", StaticBroker},
			{"message.max.bytes", "1048588", Default},
		}},
		{"default only", nil, nil, CleanupPolicy, []Synonym{
			{"log.cleanup.policy", "delete", Default},
		}},
		{"unknown", nil, nil, "nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(tt.overrides, tt.d).Synonyms(tt.key)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Synonyms(%s) = %+v, want %+v", tt.key, got, tt.want)
			}
		})
	}
}

func TestEntries(t *testing.T) {
	r := Resolve(map[string]string{RetentionMs: "1"}, Defaults{SegmentMs: "2"})
	entries := r.Entries()
	if len(entries) != len(Defs()) {
		t.Fatalf("Entries() has %d entries", len(entries))
	}
	for i, e := range entries {
		if e.Name != Defs()[i].Name {
			t.Fatalf("Entries()[%d] = %s, not in name order", i, e.Name)
		}
		want := Entry{Name: e.Name, Value: Defs()[i].Default, Source: Default}
		switch e.Name {
		case RetentionMs:
			want = Entry{RetentionMs, "1", DynamicTopic}
		case SegmentMs:
			want = Entry{SegmentMs, "2", StaticBroker}
		}
		if e != want {
			t.Errorf("entry %+v, want %+v", e, want)
		}
	}
}

func TestDefaultsValidate(t *testing.T) {
	tests := []struct {
		name    string
		d       Defaults
		wantErr error
	}{
		{"nil", nil, nil},
		{"valid", Defaults{RetentionMs: "1", CleanupPolicy: "compact"}, nil},
		{"bad value", Defaults{SegmentBytes: "1"}, ErrInvalidConfig},
		{"unknown key", Defaults{"log.segment.bytes": "1048576"}, ErrUnknownConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.d.Validate()
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Validate() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
