package cli

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/clients/admin"
)

func TestClusterInfo(t *testing.T) {
	b := broker(t)
	out := mustRun(t, "", "cluster", "info", "-b", b)
	_, port, _ := net.SplitHostPort(b)
	for _, w := range []string{"CLUSTER", "CONTROLLER  1", "NODE-ID", "1*", port} {
		if !strings.Contains(out, w) {
			t.Errorf("cluster info lacks %q:\n%s", w, out)
		}
	}
	var info admin.ClusterInfo
	out = mustRun(t, "", "cluster", "info", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.ClusterID == "" || info.Controller != 1 || len(info.Brokers) != 1 || strconv.Itoa(int(info.Brokers[0].Port)) != port {
		t.Errorf("cluster info: %+v", info)
	}
}

func TestVersion(t *testing.T) {
	out := mustRun(t, "", "version")
	if !strings.HasPrefix(out, "brokerd dev\n") || !strings.Contains(out, "github.com/brokerd/brokerd") {
		t.Errorf("version: %q", out)
	}
	var b buildInfo
	if err := json.Unmarshal([]byte(mustRun(t, "", "version", "--format", "json")), &b); err != nil || b.Version != "dev" || b.GoVersion == "" {
		t.Errorf("version --format json: %+v %v", b, err)
	}
}

// TestClusterMembers: `cluster members` through the admin API, as a table
// and as the JSON array of the documented shape; bad node ids are refused
// before anything is sent.
func TestClusterMembers(t *testing.T) {
	b := broker(t)
	adminAddr := sharedNode.AdminAddr()
	out := mustRun(t, "", "cluster", "members", "--admin", adminAddr)
	if !strings.Contains(out, "NODE-ID") || !strings.Contains(out, "1*") || !strings.Contains(out, b) {
		t.Errorf("cluster members:\n%s", out)
	}
	var ms []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "", "cluster", "members", "--format", "json", "--admin", adminAddr)), &ms); err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0]["node_id"] != float64(1) || ms[0]["leader"] != true || ms[0]["kafka_addr"] != b || ms[0]["suffrage"] != "Voter" || ms[0]["raft_addr"] == "" {
		t.Errorf("cluster members --format json: %v", ms)
	}
	if _, _, err := run(t, "", "cluster", "remove", "x", "--admin", adminAddr); err == nil {
		t.Error("remove with a bad node id succeeded")
	}
	// Transferring to the only member is a no-op.
	if _, _, err := run(t, "", "cluster", "transfer-leader", "1", "--admin", adminAddr); err != nil {
		t.Errorf("transfer-leader to the leader: %v", err)
	}
}
