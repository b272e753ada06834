package jsonschema

import (
	"strings"
	"testing"

	"github.com/brokerd/brokerd/processor"
)

func TestValidate(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []any{"id", "tags"},
		"properties": map[string]any{
			"id":    map[string]any{"type": "integer", "minimum": 1},
			"name":  map[string]any{"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
			"price": map[string]any{"type": "number", "exclusiveMaximum": 100},
			"kind":  map[string]any{"enum": []any{"a", "b"}},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 2},
		},
		"additionalProperties": false,
	}
	op, err := New(map[string]any{"schema": schema})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		value string
		err   string
	}{
		{`{"id":1,"tags":[]}`, ""},
		{`{"id":2,"name":"ab","price":99.5,"kind":"b","tags":["x","y"]}`, ""},
		{`{"id":1.0,"tags":[]}`, ""},
		{`{"tags":[]}`, `required property "id"`},
		{`{"id":0,"tags":[]}`, "minimum"},
		{`{"id":"1","tags":[]}`, "string, want integer"},
		{`{"id":1.5,"tags":[]}`, "number, want integer"},
		{`{"id":1,"name":"A1","tags":[]}`, "does not match"},
		{`{"id":1,"name":"a","tags":[]}`, "minLength"},
		{`{"id":1,"price":100,"tags":[]}`, "exclusiveMaximum"},
		{`{"id":1,"kind":"c","tags":[]}`, "not one of"},
		{`{"id":1,"tags":[1]}`, "$.tags[0]: integer, want string"},
		{`{"id":1,"tags":["a","b","c"]}`, "maxItems"},
		{`{"id":1,"tags":[],"extra":true}`, `"extra" is not allowed`},
		{`[1]`, "array, want object"},
		{`not json`, "not JSON"},
	}
	for _, c := range cases {
		var out []processor.Record
		err := op.Process(nil, processor.Record{Value: []byte(c.value)}, func(r processor.Record) { out = append(out, r) })
		switch {
		case c.err == "" && (err != nil || len(out) != 1):
			t.Errorf("%s: %v", c.value, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || len(out) != 0):
			t.Errorf("%s: error %v, want %q", c.value, err, c.err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]map[string]any{
		"no schema":         {},
		"unknown key":       {"schema": map[string]any{}, "strict": true},
		"unknown keyword":   {"schema": map[string]any{"oneOf": []any{}}},
		"unknown type":      {"schema": map[string]any{"type": "decimal"}},
		"bad pattern":       {"schema": map[string]any{"pattern": "("}},
		"negative minItems": {"schema": map[string]any{"minItems": -1}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
