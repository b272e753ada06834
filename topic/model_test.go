package topic

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestTopicValidate(t *testing.T) {
	id := NewID()
	tests := []struct {
		name    string
		topic   Topic
		wantErr error // nil: valid; errAny: some error without a sentinel
	}{
		{"valid", Topic{Name: "orders", ID: id, Partitions: 3}, nil},
		{"valid with configs", Topic{Name: "orders", ID: id, Partitions: 1, Configs: map[string]string{RetentionMs: "-1"}}, nil},
		{"bad name", Topic{Name: "a b", ID: id, Partitions: 1}, ErrInvalidName},
		{"zero partitions", Topic{Name: "orders", ID: id, Partitions: 0}, ErrInvalidPartitions},
		{"negative partitions", Topic{Name: "orders", ID: id, Partitions: -1}, ErrInvalidPartitions},
		{"bad config", Topic{Name: "orders", ID: id, Partitions: 1, Configs: map[string]string{SegmentBytes: "1"}}, ErrInvalidConfig},
		{"unknown config", Topic{Name: "orders", ID: id, Partitions: 1, Configs: map[string]string{"foo": "1"}}, ErrUnknownConfig},
		{"zero ID", Topic{Name: "orders", Partitions: 1}, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.topic.Validate()
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tt.wantErr == errAny && err == nil:
				t.Fatal("Validate() = nil")
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Validate() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestTopicJSONRoundTrip(t *testing.T) {
	in := Topic{Name: "orders", ID: NewID(), Partitions: 12, Configs: map[string]string{CleanupPolicy: "compact"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Topic
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v != %+v", out, in)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "id", "partitions", "configs"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("JSON lacks field %q: %s", k, b)
		}
	}
}

func TestTopicCloneAndResolve(t *testing.T) {
	orig := Topic{Name: "orders", ID: NewID(), Partitions: 1, Configs: map[string]string{RetentionMs: "1000"}}
	c := orig.Clone()
	c.Configs[RetentionMs] = "5"
	if orig.Configs[RetentionMs] != "1000" {
		t.Fatal("Clone shares Configs")
	}
	r := orig.Resolve(Defaults{RetentionMs: "9", SegmentMs: "7"})
	if r.Int64(RetentionMs) != 1000 || r.Int64(SegmentMs) != 7 {
		t.Fatal("Topic.Resolve does not apply overrides over defaults")
	}
}
