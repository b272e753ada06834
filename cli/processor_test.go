package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestProcessorCommands: deploy from stdin, list, status, state, pause,
// resume and delete, as tables and as JSON, through the admin API.
func TestProcessorCommands(t *testing.T) {
	b := broker(t)
	admin := sharedNode.AdminAddr()
	mustRun(t, "", "topic", "create", "cli-clicks", "-p", "2", "-b", b)
	spec := "name: cli-counts\ninputs: [cli-clicks]\noutput: cli-click-counts\nstages:\n  - key_by: key\n  - aggregate: {op: count}\n"
	out := mustRun(t, spec, "processor", "deploy", "-f", "-", "--admin", admin)
	if !strings.Contains(out, "cli-counts") || !strings.Contains(out, "NAME") {
		t.Fatalf("deploy:\n%s", out)
	}
	mustRun(t, "a:1\na:2\nb:3\n", "produce", "cli-clicks", "--key-separator", ":", "-b", b)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var p struct {
			RecordsIn int64 `json:"records_in"`
		}
		_ = json.Unmarshal([]byte(mustRun(t, "", "processor", "status", "cli-counts", "--format", "json", "--admin", admin)), &p)
		if p.RecordsIn == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the processor consumed %d of 3 records", p.RecordsIn)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := mustRun(t, "", "processor", "status", "cli-counts", "--admin", admin); !strings.Contains(out, "RECORDS-IN") || !strings.Contains(out, "cli-clicks/0") {
		t.Errorf("status:\n%s", out)
	}
	var v struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "", "processor", "state", "cli-counts", "a", "--format", "json", "--admin", admin)), &v); err != nil || v.Value["count"] != float64(2) {
		t.Errorf("state of a: %+v %v", v, err)
	}
	if out := mustRun(t, "", "processor", "pause", "cli-counts", "--admin", admin); !strings.Contains(out, "paused") {
		t.Errorf("pause:\n%s", out)
	}
	if out := mustRun(t, "", "processor", "resume", "cli-counts", "--admin", admin); strings.Contains(out, "paused") {
		t.Errorf("resume:\n%s", out)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "", "processor", "list", "--format", "json", "--admin", admin)), &list); err != nil || len(list) == 0 {
		t.Errorf("list: %v %v", list, err)
	}
	if _, _, err := run(t, "name: x\n", "processor", "deploy", "-f", "-", "--admin", admin); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a bad spec: %v", err)
	}
	mustRun(t, "", "processor", "delete", "cli-counts", "--admin", admin)
	if _, _, err := run(t, "", "processor", "status", "cli-counts", "--admin", admin); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("status after delete: %v", err)
	}
}
