package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServePrintConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(file, []byte("num.partitions=3\nlog.retention.hours=24\nlog.dirs=/from/file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROKERD_NUM_PARTITIONS", "4")
	out := mustRun(t, "", "--config", file, "--print-config", "--data-dir", "/from/flag",
		"--shutdown-timeout", "5s", "--override", "log.segment.bytes=1048576", "--auto-create-topics=false")
	for _, w := range []string{
		"num.partitions", "BROKERD_NUM_PARTITIONS",
		"log.retention.hours", file + ":2",
		"brokerd.shutdown.timeout.ms", "5000", "--shutdown-timeout",
		"log.segment.bytes", "--override log.segment.bytes",
		"auto.create.topics.enable", "--auto-create-topics",
		"node.id", "default",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--print-config lacks %q:\n%s", w, out)
		}
	}
	if l := lineOf(out, "log.dirs"); !strings.Contains(l, "/from/flag") || !strings.Contains(l, "--data-dir") {
		t.Errorf("the flag does not win over the file: %q", l)
	}
	if !strings.Contains(lineOf(out, "num.partitions"), "4") {
		t.Errorf("env does not win over the file: %q", lineOf(out, "num.partitions"))
	}
}

func lineOf(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, key+" ") {
			return l
		}
	}
	return ""
}

func TestServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	yaml := filepath.Join(dir, "brokerd.yaml")
	if err := os.WriteFile(yaml, []byte("log:\n  dirs: /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--override", "nope=1"}, `unknown config key "nope"`},
		{[]string{"--override", "novalue"}, "want key=value"},
		{[]string{"--node-id", "abc"}, "--node-id"},
		{[]string{"--shutdown-timeout", "soon"}, "--shutdown-timeout"},
		{[]string{"--log-format", "xml"}, "brokerd.log.format"},
		{[]string{"--config", filepath.Join(dir, "missing.properties")}, "no such file"},
		{[]string{"--config", yaml}, "line 2: indented"},
		{[]string{"--kafka-addr", "SSL://:9093"}, "--kafka-addr: listeners=\"SSL://:9093\": invalid config value: listener SSL uses SSL: set ssl.keystore.location"},
		{[]string{"--override", "listeners=SASL_SSL://:9093"}, "set ssl.keystore.location"},
		{[]string{"--tls"}, "unknown flag: --tls"},
		{[]string{"extra-arg"}, "unknown command"},
	}
	for _, tt := range tests {
		_, _, err := run(t, "", append(tt.args, "--print-config")...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("brokerd %v: %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
