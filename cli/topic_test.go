package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/clients/admin"
)

func TestTopicCommands(t *testing.T) {
	b := broker(t)
	out := mustRun(t, "", "topic", "create", "orders", "-p", "3", "-c", "retention.ms=3600000", "-b", b)
	if !strings.Contains(out, "created topic orders (3 partitions") {
		t.Errorf("create: %q", out)
	}
	var created admin.CreatedTopic
	out = mustRun(t, "", "topic", "create", "orders-json", "-p", "2", "-r", "1", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Name != "orders-json" || created.Partitions != 2 || created.ID == "" {
		t.Errorf("create --format json: %q (%v)", out, err)
	}
	if _, _, err := run(t, "", "topic", "create", "orders", "-p", "1", "-b", b); err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Errorf("creating an existing topic: %v", err)
	}

	out = mustRun(t, "", "topic", "list", "-b", b)
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "orders ") || !strings.Contains(out, "orders-json") {
		t.Errorf("list: %q", out)
	}
	var list []admin.TopicSummary
	out = mustRun(t, "", "topic", "list", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list --format json: %v\n%s", err, out)
	}
	found := false
	for _, ts := range list {
		if ts.Name == "orders" && ts.Partitions == 3 && ts.ReplicationFactor == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("orders missing from %+v", list)
	}

	mustRun(t, "a\nb\nc\nd\n", "produce", "orders", "-p", "2", "-b", b)
	out = mustRun(t, "", "topic", "describe", "orders", "-b", b)
	for _, w := range []string{"PARTITIONS  3", "HIGH-WATERMARK", "retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG"} {
		if !strings.Contains(out, w) {
			t.Errorf("describe lacks %q:\n%s", w, out)
		}
	}
	var d admin.TopicDescription
	out = mustRun(t, "", "topic", "describe", "orders", "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("describe --format json: %v", err)
	}
	if len(d.Partitions) != 3 || d.Partitions[2].EndOffset != 4 || d.Partitions[0].EndOffset != 0 || d.Partitions[2].Leader != 1 {
		t.Errorf("describe partitions: %+v", d.Partitions)
	}
	if v := configValue(d, "retention.ms"); v.Value != "3600000" || v.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms: %+v", v)
	}

	out = mustRun(t, "", "topic", "alter-config", "orders", "-c", "segment.bytes=1048576", "--delete", "retention.ms", "-b", b)
	if !strings.Contains(out, "set segment.bytes=1048576") || !strings.Contains(out, "removed retention.ms") {
		t.Errorf("alter-config: %q", out)
	}
	out = mustRun(t, "", "topic", "describe", "orders", "--format", "json", "-b", b)
	d = admin.TopicDescription{}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if v := configValue(d, "segment.bytes"); v.Value != "1048576" || v.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("segment.bytes after alter: %+v", v)
	}
	if v := configValue(d, "retention.ms"); v.Source == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms still overridden after --delete: %+v", v)
	}
	if _, _, err := run(t, "", "topic", "alter-config", "orders", "-c", "cleanup.policy=shred", "-b", b); err == nil {
		t.Error("alter-config accepted a bad value")
	}
	if _, _, err := run(t, "", "topic", "alter-config", "orders", "-b", b); err == nil {
		t.Error("alter-config with nothing to change succeeded")
	}

	out = mustRun(t, "", "topic", "delete", "orders-json", "-b", b)
	if !strings.Contains(out, "deleted topic orders-json") {
		t.Errorf("delete: %q", out)
	}
	out = mustRun(t, "", "topic", "list", "-b", b)
	if strings.Contains(out, "orders-json") {
		t.Errorf("deleted topic still listed:\n%s", out)
	}
	if _, _, err := run(t, "", "topic", "describe", "orders-json", "-b", b); err == nil {
		t.Error("describing a deleted topic succeeded")
	}
}

func configValue(d admin.TopicDescription, name string) admin.ConfigEntry {
	for _, c := range d.Configs {
		if c.Name == name {
			return c
		}
	}
	return admin.ConfigEntry{}
}

func TestClientFlagErrors(t *testing.T) {
	if _, _, err := run(t, "", "topic", "list", "--format", "yaml"); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("--format yaml: %v", err)
	}
	if _, _, err := run(t, "", "topic", "create"); err == nil {
		t.Error("topic create without a name succeeded")
	}
}
