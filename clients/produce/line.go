package produce

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header is a record header.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ParseHeader reads "key=value".
func ParseHeader(s string) (Header, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return Header{}, fmt.Errorf("header %q: want key=value", s)
	}
	return Header{Key: k, Value: v}, nil
}

// Record builds the record for one input line (without its newline). With
// a key separator, the line is split at its first occurrence: the key
// before, the value after; a line without the separator is all value and
// has no key. The line is copied.
func Record(line []byte, opts Options) *kgo.Record {
	r := &kgo.Record{Topic: opts.Topic}
	value := line
	if opts.KeySeparator != "" {
		if k, v, ok := bytes.Cut(line, []byte(opts.KeySeparator)); ok {
			r.Key = bytes.Clone(k)
			if r.Key == nil {
				r.Key = []byte{}
			}
			value = v
		}
	}
	r.Value = bytes.Clone(value)
	if r.Value == nil {
		r.Value = []byte{}
	}
	for _, h := range opts.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	if opts.Partition >= 0 {
		r.Partition = opts.Partition
	}
	return r
}
