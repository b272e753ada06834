package consume

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// JSONRecord is a record as `brokerd consume --format json` prints it, one
// object per line. Keys, values and header values that are not valid UTF-8
// are base64-encoded and flagged.
type JSONRecord struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	Offset      int64        `json:"offset"`
	Timestamp   int64        `json:"timestamp"`
	Key         *string      `json:"key"`
	KeyBase64   bool         `json:"key_base64,omitempty"`
	Value       *string      `json:"value"`
	ValueBase64 bool         `json:"value_base64,omitempty"`
	Headers     []JSONHeader `json:"headers,omitempty"`
}

// JSONHeader is one header of a JSONRecord.
type JSONHeader struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	ValueBase64 bool   `json:"value_base64,omitempty"`
}

// ToJSON converts a record.
func ToJSON(r *kgo.Record) JSONRecord {
	j := JSONRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	j.Key, j.KeyBase64 = text(r.Key)
	j.Value, j.ValueBase64 = text(r.Value)
	for _, h := range r.Headers {
		v, b64 := text(h.Value)
		jh := JSONHeader{Key: h.Key, ValueBase64: b64}
		if v != nil {
			jh.Value = *v
		}
		j.Headers = append(j.Headers, jh)
	}
	return j
}

func text(b []byte) (*string, bool) {
	if b == nil {
		return nil, false
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, false
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, true
}
