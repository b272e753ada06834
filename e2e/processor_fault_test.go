package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestFaultProcessorsExactlyOnce: on three brokerd processes, a copy
// processor and a per-key count run while the leader is SIGKILLed every
// 8 s (and restarted 2 s later). Afterwards the copy holds every input
// record exactly once, and the final count of every key equals the count
// in the input, in the output topic and in the state.
func TestFaultProcessorsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	dur := 25 * time.Second
	if longTests() {
		dur = 60 * time.Second
	}
	c := newProcCluster(t, 3)
	createClusterTopic(t, c, "eo-in", 3)
	specs := "name: eo-copy\ninputs: [eo-in]\noutput: eo-copy-out\nstages:\n  - filter: \"true\"\n" +
		"---\nname: eo-count\ninputs: [eo-in]\noutput: eo-count-out\nstages:\n  - key_by: key\n  - aggregate: {op: count}\n"
	l := c.waitLeader(30 * time.Second)
	if code, body := adminCall(t, http.MethodPost, c.nodes[(l+1)%3].adminAddr(), "/v1/processors", []byte(specs)); code != http.StatusCreated {
		t.Fatalf("deploy through a follower: %d %s", code, body)
	}
	lp := startLoad(t, c, "eo-in", 1500)
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		time.Sleep(6 * time.Second)
		l := c.waitLeader(30 * time.Second)
		c.nodes[l].kill()
		time.Sleep(2 * time.Second)
		c.nodes[l].launch()
	}
	for _, bp := range c.nodes {
		bp.waitReady(60 * time.Second)
	}
	lp.stop(t)
	leader := c.nodes[c.waitLeader(30*time.Second)]
	input, _ := readEverything(t, leader.kafkaAddr(), "eo-in")
	for _, name := range []string{"eo-copy", "eo-count"} {
		waitFor(t, 60*time.Second, name+" to catch up", func() (bool, string) {
			code, body := adminCall(t, http.MethodGet, c.nodes[c.waitLeader(30*time.Second)].adminAddr(), "/v1/processors/"+name, nil)
			var d struct {
				RecordsIn int64  `json:"records_in"`
				Lag       int64  `json:"lag"`
				LastError string `json:"last_error"`
			}
			_ = json.Unmarshal(body, &d)
			return code == http.StatusOK && d.Lag == 0 && d.RecordsIn == int64(len(input)), fmt.Sprintf("%d %+v (input %d)", code, d, len(input))
		})
	}
	leader = c.nodes[c.waitLeader(30*time.Second)]

	copied, _ := readEverything(t, leader.kafkaAddr(), "eo-copy-out")
	var lost, dup int
	for v, at := range input {
		switch n := len(copied[v]); {
		case n == 0:
			lost++
		case n > len(at):
			dup++
		}
	}
	if lost > 0 || dup > 0 || len(copied) != len(input) {
		t.Fatalf("copy: %d input records lost, %d duplicated (%d distinct in, %d out)", lost, dup, len(input), len(copied))
	}

	truth := map[string]int{}
	for v, at := range input {
		truth[v[len(v)-2:]] += len(at)
	}
	counts := lastPerKey(t, leader.kafkaAddr(), "eo-count-out", len(truth))
	for k, want := range truth {
		if counts[k] != fmt.Sprintf(`{"count":%d}`, want) {
			t.Fatalf("count of key %s: output %s, want %d", k, counts[k], want)
		}
		code, body := adminCall(t, http.MethodGet, leader.adminAddr(), "/v1/processors/eo-count/state/"+k, nil)
		if code != http.StatusOK || string(body) != fmt.Sprintf("{\"key\":%q,\"value\":{\"count\":%d}}\n", k, want) {
			t.Fatalf("state of key %s: %d %s, want count %d", k, code, body, want)
		}
	}
	t.Logf("%d input records, %d keys: every one copied once and counted once", len(input), len(truth))
}
