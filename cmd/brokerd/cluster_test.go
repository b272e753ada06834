package main

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
