package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
	_ "github.com/brokerd/brokerd/processor/plugins/jsonschema"
)

const copyAndCountSpecs = `
name: copy
inputs: [orders]
output: orders-copy
stages:
  - filter: "true"
---
name: counts
inputs: [orders]
output: order-counts
stages:
  - key_by: "key"
  - aggregate: {op: count}
`

// produceKeyed produces n records to topic with keys cycling over keys
// and values "v-<i>", acks=all, and returns the count per key.
func produceKeyed(t *testing.T, addr, topic string, from, n, keys int) map[string]int {
	t.Helper()
	cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	counts := map[string]int{}
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("k%d", i%keys)
		counts[k]++
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// lastPerKey reads a topic from the start and keeps each key's last value.
func lastPerKey(t *testing.T, addr, topic string, want int) map[string]string {
	t.Helper()
	recs := consumeUntil(t, addr, topic, atStart(4), want, 30*time.Second)
	out := map[string]string{}
	for _, rs := range recs {
		for _, r := range rs {
			out[string(r.Key)] = string(r.Value)
		}
	}
	return out
}

func waitProcessed(t *testing.T, admin, name string, in int64) node.ClusterStatus {
	t.Helper()
	waitFor(t, 30*time.Second, "processor "+name+" to consume its input", func() (bool, string) {
		code, body := adminCall(t, http.MethodGet, admin, "/v1/processors/"+name, nil)
		var d struct {
			RecordsIn int64  `json:"records_in"`
			Lag       int64  `json:"lag"`
			State     string `json:"state"`
			LastError string `json:"last_error"`
		}
		_ = json.Unmarshal(body, &d)
		return code == http.StatusOK && d.RecordsIn == in && d.Lag == 0, fmt.Sprintf("%d %+v", code, d)
	})
	return node.ClusterStatus{}
}

// TestProcessorsCopyAndCount: a copy processor and a per-key count, deployed
// from YAML through the admin API, read with franz-go: the copy holds every
// input once, the counts equal the truth, the state endpoint answers, and
// after a restart both resume from their committed offsets and state.
func TestProcessorsCopyAndCount(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, func(c *node.Config) { c.DataDir = dir })
	addr, admin := n.KafkaAddr(), n.AdminAddr()
	createTopic(t, newAdmin(t, addr), "orders", 4, nil)

	code, body := adminCall(t, http.MethodPost, admin, "/v1/processors", []byte(copyAndCountSpecs))
	if code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, body)
	}
	truth := produceKeyed(t, addr, "orders", 0, 1000, 7)
	waitProcessed(t, admin, "copy", 1000)
	waitProcessed(t, admin, "counts", 1000)

	copied := consumeUntil(t, addr, "orders-copy", atStart(4), 1000, 30*time.Second)
	seen := map[string]int{}
	for _, rs := range copied {
		for _, r := range rs {
			seen[string(r.Value)]++
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("the copy holds %d distinct records, want 1000", len(seen))
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("%s copied %d times", v, c)
		}
	}
	checkCounts := func(truth map[string]int, when string) {
		t.Helper()
		last := lastPerKey(t, addr, "order-counts", len(truth))
		for k, want := range truth {
			if last[k] != fmt.Sprintf(`{"count":%d}`, want) {
				t.Fatalf("%s: key %s: output %s, want count %d", when, k, last[k], want)
			}
			code, body := adminCall(t, http.MethodGet, admin, "/v1/processors/counts/state/"+k, nil)
			if code != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"count":%d`, want)) {
				t.Fatalf("%s: state of %s: %d %s", when, k, code, body)
			}
		}
	}
	checkCounts(truth, "after the first load")
	if code, _ := adminCall(t, http.MethodGet, admin, "/v1/processors/counts/state/nope", nil); code != http.StatusNotFound {
		t.Fatalf("state of an absent key: %d", code)
	}

	// Restart: both resume where they committed, with their state.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, func(c *node.Config) { c.DataDir = dir })
	addr, admin = n.KafkaAddr(), n.AdminAddr()
	more := produceKeyed(t, addr, "orders", 1000, 500, 7)
	for k, c := range more {
		truth[k] += c
	}
	waitProcessed(t, admin, "copy", 1500)
	waitProcessed(t, admin, "counts", 1500)
	checkCounts(truth, "after a restart")
}

// TestProcessorBadSpecs: specs that cannot run are refused with a 400
// that names the stage and the problem; nothing is deployed.
func TestProcessorBadSpecs(t *testing.T) {
	n := startNode(t)
	admin := n.AdminAddr()
	createTopic(t, newAdmin(t, n.KafkaAddr()), "in", 1, nil)
	cases := map[string]string{
		"unknown stage":      "name: a\ninputs: [in]\noutput: o\nstages:\n  - explode: true\n",
		"bad expression":     "name: b\ninputs: [in]\noutput: o\nstages:\n  - filter: \"value.x ==\"\n",
		"missing input":      "name: c\ninputs: [nope]\noutput: o\nstages:\n  - filter: \"true\"\n",
		"output is input":    "name: d\ninputs: [in]\noutput: in\nstages:\n  - filter: \"true\"\n",
		"unknown plugin":     "name: e\ninputs: [in]\noutput: o\nstages:\n  - plugin: nope\n",
		"aggregate needs of": "name: f\ninputs: [in]\noutput: o\nstages:\n  - aggregate: {op: sum}\n",
	}
	for name, spec := range cases {
		code, body := adminCall(t, http.MethodPost, admin, "/v1/processors", []byte(spec))
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	code, body := adminCall(t, http.MethodGet, admin, "/v1/processors", nil)
	if code != http.StatusOK || string(body) != "[]\n" {
		t.Fatalf("after refused specs: %d %s", code, body)
	}
}

// TestProcessorDeadLetters: a record an expression fails on goes to
// <name>.dlq unchanged, with the error in a header; the others go on.
func TestProcessorDeadLetters(t *testing.T) {
	n := startNode(t)
	addr, admin := n.KafkaAddr(), n.AdminAddr()
	createTopic(t, newAdmin(t, addr), "prices", 1, nil)
	spec := "name: double\ninputs: [prices]\noutput: doubled\nstages:\n  - map: {value: \"value.price * 2\"}\n"
	if code, body := adminCall(t, http.MethodPost, admin, "/v1/processors", []byte(spec)); code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, body)
	}
	cl := newKgo(t, addr, kgo.DefaultProduceTopic("prices"))
	vals := []string{`{"price":1}`, `not json`, `{"price":3}`}
	for _, v := range vals {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := consumeUntil(t, addr, "doubled", atStart(1), 2, 20*time.Second)
	if got := len(out[0]); got != 2 || string(out[0][0].Value) != "2" || string(out[0][1].Value) != "6" {
		t.Fatalf("output: %d records", got)
	}
	dead := consumeUntil(t, addr, "double.dlq", atStart(1), 1, 20*time.Second)
	if len(dead[0]) != 1 || string(dead[0][0].Value) != "not json" {
		t.Fatalf("dead letters: %v", dead)
	}
	var errHeader string
	for _, h := range dead[0][0].Headers {
		if h.Key == "error" {
			errHeader = string(h.Value)
		}
	}
	if !strings.Contains(errHeader, "map value") {
		t.Fatalf("dead letter error header %q", errHeader)
	}
	waitProcessed(t, admin, "double", 3)
}

// TestProcessorWindows: the per-minute spec shape (event time from
// the value, lateness), read with franz-go: each window is emitted once
// when the watermark passes its end, and a record behind the watermark
// goes to <name>.late.
func TestProcessorWindows(t *testing.T) {
	n := startNode(t)
	addr, admin := n.KafkaAddr(), n.AdminAddr()
	createTopic(t, newAdmin(t, addr), "clicks", 1, nil)
	spec := `
name: per-minute
inputs: [clicks]
output: clicks-per-minute
stages:
  - key_by: "key"
  - window: {type: tumbling, size: 60s, time: "value.ts", lateness: 5s}
  - aggregate: {op: count}
`
	if code, body := adminCall(t, http.MethodPost, admin, "/v1/processors", []byte(spec)); code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, body)
	}
	cl := newKgo(t, addr, kgo.DefaultProduceTopic("clicks"))
	send := func(key string, ts int64) {
		t.Helper()
		r := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf(`{"ts":%d}`, ts))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	send("u1", 10_000)
	send("u1", 50_000)
	send("u2", 59_000)
	send("u1", 66_000) // watermark 61 s: [0, 60 s) closes
	send("u2", 30_000) // behind the watermark: late
	out := consumeUntil(t, addr, "clicks-per-minute", atStart(1), 2, 20*time.Second)
	got := map[string]string{}
	for _, r := range out[0] {
		got[string(r.Key)] = string(r.Value)
	}
	if got["u1"] != `{"count":2,"window_end":60000,"window_start":0}` || got["u2"] != `{"count":1,"window_end":60000,"window_start":0}` || len(out[0]) != 2 {
		t.Fatalf("windows: %v", got)
	}
	late := consumeUntil(t, addr, "per-minute.late", atStart(1), 1, 20*time.Second)
	if len(late[0]) != 1 || string(late[0][0].Value) != `{"ts":30000}` {
		t.Fatalf("late: %v", late)
	}
	waitProcessed(t, admin, "per-minute", 5)
}

// TestProcessorPlugin: the shipped json_schema plugin in a deployed spec;
// records that fail the schema go to the dead-letter topic with the reason.
func TestProcessorPlugin(t *testing.T) {
	n := startNode(t)
	addr, admin := n.KafkaAddr(), n.AdminAddr()
	createTopic(t, newAdmin(t, addr), "events", 1, nil)
	spec := `
name: valid-events
inputs: [events]
output: events-valid
stages:
  - plugin: json_schema
    config:
      schema: {type: object, required: [id], properties: {id: {type: integer, minimum: 1}}}
`
	if code, body := adminCall(t, http.MethodPost, admin, "/v1/processors", []byte(spec)); code != http.StatusCreated {
		t.Fatalf("deploy: %d %s", code, body)
	}
	cl := newKgo(t, addr, kgo.DefaultProduceTopic("events"))
	for _, v := range []string{`{"id":1}`, `{"id":0}`, `{"name":"x"}`, `{"id":7}`} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ok := consumeUntil(t, addr, "events-valid", atStart(1), 2, 20*time.Second)
	dead := consumeUntil(t, addr, "valid-events.dlq", atStart(1), 2, 20*time.Second)
	if len(ok[0]) != 2 || string(ok[0][1].Value) != `{"id":7}` || len(dead[0]) != 2 {
		t.Fatalf("valid %d, dead %d", len(ok[0]), len(dead[0]))
	}
}
