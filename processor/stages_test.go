package processor

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// memState is committed state for tests.
type memState map[string][]byte

func (m memState) get(k []byte) ([]byte, bool, error) { v, ok := m[string(k)]; return v, ok, nil }

func (m memState) scan(prefix []byte, fn func(k, v []byte) bool) error {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !fn([]byte(k), m[k]) {
			break
		}
	}
	return nil
}

func compileStages(t testing.TB, stages ...Stage) *pipeline {
	t.Helper()
	s := &Spec{Name: "t", Inputs: []string{"in"}, Output: "out", Stages: stages}
	p, err := compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rec(key, value string) Record {
	return Record{Key: []byte(key), Value: []byte(value), Timestamp: 1000, Topic: "in", Partition: 2, Offset: 7}
}

func withHeader(r Record, k, v string) Record {
	r.Headers = append(r.Headers, Header{Key: k, Value: []byte(v)})
	return r
}

func TestStatelessStages(t *testing.T) {
	cases := []struct {
		name  string
		stage Stage
		in    Record
		want  []string // "key=value" of outputs
		err   string
	}{
		{"filter true", Stage{Filter: "true"}, rec("a", "1"), []string{"a=1"}, ""},
		{"filter on json", Stage{Filter: "value.price > 10"}, rec("a", `{"price":11}`), []string{`a={"price":11}`}, ""},
		{"filter drops", Stage{Filter: "value.price > 10"}, rec("a", `{"price":9}`), nil, ""},
		{"filter on key and headers", Stage{Filter: `key == "a" && partition == 2 && offset == 7 && timestamp == 1000`}, rec("a", "x"), []string{"a=x"}, ""},
		{"filter on a string value", Stage{Filter: `value == "x"`}, rec("a", "x"), []string{"a=x"}, ""},
		{"map value to json", Stage{Map: &MapSpec{Value: `{"eur": value.price * 0.9}`}}, rec("a", `{"price":10}`), []string{`a={"eur":9}`}, ""},
		{"map key", Stage{Map: &MapSpec{Key: `upper(key)`}}, rec("a", "v"), []string{"A=v"}, ""},
		{"key_by a field", Stage{KeyBy: `string(value.user)`}, rec("", `{"user":42}`), []string{`42={"user":42}`}, ""},
		{"no headers", Stage{Filter: `headers["h"] == "" && len(headers) == 0`}, rec("a", "x"), []string{"a=x"}, ""},
		{"headers as a value", Stage{Map: &MapSpec{Value: `headers`}}, rec("a", "x"), []string{"a={}"}, ""},
		{"a header", Stage{Filter: `headers["h"] == "v"`}, withHeader(rec("a", "x"), "h", "v"), []string{"a=x"}, ""},
		{"map fails at run time", Stage{Map: &MapSpec{Value: `value.price * 2`}}, rec("a", `"text"`), nil, "map value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := compileStages(t, c.stage)
			st := newStepState(memState{}.get, nil)
			var got []string
			err := p.run(st, 0, c.in, func(r Record) error { got = append(got, string(r.Key)+"="+string(r.Value)); return nil })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestAggregates(t *testing.T) {
	cases := []struct {
		op, of string
		want   string
	}{
		{"count", "", `{"count":3}`},
		{"sum", "value.n", `{"sum":6}`},
		{"min", "value.n", `{"min":1}`},
		{"max", "value.n", `{"max":3}`},
		{"avg", "value.n", `{"avg":2}`},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			p := compileStages(t, Stage{KeyBy: "key"}, Stage{Aggregate: &AggregateSpec{Op: c.op, Of: c.of}})
			committed := memState{}
			st := newStepState(committed.get, committed.scan)
			// Two records in one step, one in the next: state carries over.
			for i, n := range []int{1, 2} {
				if err := p.run(st, 0, rec("k", `{"n":`+string(rune('0'+n))+`}`), func(Record) error { return nil }); err != nil {
					t.Fatal(i, err)
				}
				st.commitRecord()
			}
			flush := func(st *stepState) []string {
				var out []string
				agg := p.ops[1].(Flusher)
				if err := agg.Flush(stageState{st, stagePrefix(1)}, func(r Record) { out = append(out, string(r.Key)+"="+string(r.Value)) }); err != nil {
					t.Fatal(err)
				}
				return out
			}
			if got := flush(st); len(got) != 1 {
				t.Fatalf("first step emitted %v", got)
			}
			for k, v := range st.step {
				committed[k] = v
			}
			st = newStepState(committed.get, committed.scan)
			if err := p.run(st, 0, rec("k", `{"n":3}`), func(Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
			st.commitRecord()
			got := flush(st)
			if len(got) != 1 || got[0] != "k="+c.want {
				t.Fatalf("emitted %v, want k=%s", got, c.want)
			}
			if again := flush(st); len(again) != 0 {
				t.Fatalf("a second flush emitted %v", again)
			}
		})
	}
}

func TestParseSpecs(t *testing.T) {
	yamlSpecs := "name: a\ninputs: [in]\noutput: o\nstages:\n  - filter: \"true\"\n---\nname: b\ninputs: [in]\noutput: p\nstages:\n  - key_by: key\n  - aggregate: {op: count}\nstep: {max_records: 500, interval: 50ms}\n"
	specs, err := ParseSpecs([]byte(yamlSpecs))
	if err != nil || len(specs) != 2 || specs[1].stepRecords() != 500 || specs[1].stepInterval().Milliseconds() != 50 {
		t.Fatalf("yaml: %v %+v", err, specs)
	}
	js, _ := json.Marshal(specs)
	back, err := ParseSpecs(js)
	if err != nil || len(back) != 2 || back[1].Step.MaxRecords != 500 {
		t.Fatalf("json round trip: %v %s", err, js)
	}
	bad := map[string]string{
		"two kinds in one stage": "name: a\ninputs: [in]\noutput: o\nstages:\n  - {filter: \"true\", key_by: key}\n",
		"unknown field":          "name: a\ninputs: [in]\noutput: o\nstages:\n  - filtre: \"true\"\n",
		"no stages":              "name: a\ninputs: [in]\noutput: o\n",
		"count with of":          "name: a\ninputs: [in]\noutput: o\nstages:\n  - aggregate: {op: count, of: value}\n",
		"bad op":                 "name: a\ninputs: [in]\noutput: o\nstages:\n  - aggregate: {op: median, of: value}\n",
		"bad name":               "name: \"a/b\"\ninputs: [in]\noutput: o\nstages:\n  - filter: \"true\"\n",
		"dlq as input":           "name: a\ninputs: [a.dlq]\noutput: o\nstages:\n  - filter: \"true\"\n",
		"filter not bool":        "name: a\ninputs: [in]\noutput: o\nstages:\n  - filter: \"key\"\n",
	}
	for name, s := range bad {
		if _, err := ParseSpecs([]byte(s)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "filter not bool" && !strings.Contains(err.Error(), "stage 1 (filter)") {
			t.Errorf("%s: the error does not name the stage: %v", name, err)
		}
	}
}

func TestMurmur2MatchesKafka(t *testing.T) {
	// Values from Kafka's UtilsTest.testMurmur2.
	cases := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	for in, want := range cases {
		if got := int32(murmur2([]byte(in))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}
