package processor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

var jsonSeeds = []string{
	`{"type":"bid","auction":12,"bidder":3,"price":4.5,"ts":1000}`,
	`[1,-0.5e-7,1e21,1E+2,0,-0,"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00",true,false,null,{}]`,
	` {"a" : [ ] , "b":{"c":"<&>"}, "a": 2 } `,
	"\"\xff\xfe caf\xc3\xa9\"", `"\u2028\u0001"`, `1e400`, `01`, `1.`, `-`, `.5`, `1e`, `"\x"`, `"\u12"`,
	"\"a\x01\"", `{"a" 1}`, `{"a":1,}`, `[1,]`, `tru`, `nul`, `"`, ``, ` `, `{}x`, `[[[[]]]]`, "\ufeff{}",
	`{"n":123456789012345678901234567890}`, `[1.7976931348623157e308,5e-324,1e-7,123456789.125]`,
}

// FuzzParseJSON: parseJSON accepts what json.Unmarshal into an any
// accepts, and gives the same value.
func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want any
		werr := json.Unmarshal(b, &want)
		got, err := parseJSON(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: parseJSON error %v, encoding/json error %v", b, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parseJSON %#v, encoding/json %#v", b, got, want)
		}
	})
}

// FuzzAppendJSON: appendJSON writes what json.Marshal writes, for every
// value parsed JSON can be, and for ints.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), int64(len(s)))
	}
	f.Fuzz(func(t *testing.T, b []byte, n int64) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			v = string(b)
		}
		for _, v := range []any{v, map[string]any{"v": v, "n": n, "i": int(n), "f": float64(n) / 7}} {
			want, werr := json.Marshal(v)
			got, err := appendJSON([]byte("prefix"), v)
			if (err == nil) != (werr == nil) || (err == nil && !bytes.Equal(got, append([]byte("prefix"), want...))) {
				t.Fatalf("%#v: appendJSON %q (%v), json.Marshal %q (%v)", v, got, err, want, werr)
			}
		}
	})
}

// TestParseJSONLinear: many short strings with escapes or non-ASCII bytes
// cost memory in proportion to the input, not its square.
func TestParseJSONLinear(t *testing.T) {
	in := []byte("[" + strings.TrimSuffix(strings.Repeat(`"\u00e9t\u00e9",`, 50000), ",") + "]")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v, err := parseJSON(in)
	runtime.ReadMemStats(&after)
	if err != nil || len(v.([]any)) != 50000 {
		t.Fatalf("parse: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40*uint64(len(in)) {
		t.Fatalf("parsing %d bytes allocated %d", len(in), alloc)
	}
}
