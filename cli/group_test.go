package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/clients/admin"
)

func TestGroupCommands(t *testing.T) {
	b := broker(t)
	requireGroups(t, b)
	mustRun(t, "", "topic", "create", "gt", "-p", "2", "-b", b)
	mustRun(t, "a\nb\nc\nd\ne\nf\n", "produce", "gt", "-p", "0", "-b", b)
	mustRun(t, "g\nh\n", "produce", "gt", "-p", "1", "-b", b)

	// A group consumer commits what it printed.
	out := mustRun(t, "", "consume", "gt", "-g", "billing", "-e", "-f", `%v`, "-b", b)
	if len(out) != 8 {
		t.Fatalf("group consume printed %q", out)
	}
	out = mustRun(t, "", "group", "list", "-b", b)
	if !strings.Contains(out, "billing") || !strings.Contains(out, "GROUP") {
		t.Errorf("group list: %q", out)
	}
	out = mustRun(t, "", "group", "describe", "billing", "-b", b)
	for _, w := range []string{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID", "total lag 0"} {
		if !strings.Contains(out, w) {
			t.Errorf("group describe lacks %q:\n%s", w, out)
		}
	}
	d := describeGroup(t, b, "billing")
	if offsetOf(d, "gt", 0) != 6 || offsetOf(d, "gt", 1) != 2 || d.TotalLag != 0 {
		t.Errorf("after consuming: %+v", d.Offsets)
	}

	// Seek back to the start, to an offset, to a time, to the end.
	out = mustRun(t, "", "group", "seek", "billing", "--to", "start", "-b", b)
	if !strings.Contains(out, "FROM") || !strings.Contains(out, "gt") {
		t.Errorf("seek: %q", out)
	}
	d = describeGroup(t, b, "billing")
	if offsetOf(d, "gt", 0) != 0 || d.TotalLag != 8 {
		t.Errorf("after seek to start: %+v lag %d", d.Offsets, d.TotalLag)
	}
	mustRun(t, "", "group", "seek", "billing", "--to", "4", "--topic", "gt", "-b", b)
	d = describeGroup(t, b, "billing")
	if offsetOf(d, "gt", 0) != 4 || offsetOf(d, "gt", 1) != 2 {
		t.Errorf("after seek to 4 (clamped): %+v", d.Offsets)
	}
	mustRun(t, "", "group", "seek", "billing", "--to", "@0", "-b", b)
	if d = describeGroup(t, b, "billing"); offsetOf(d, "gt", 0) != 0 {
		t.Errorf("after seek to time 0: %+v", d.Offsets)
	}
	mustRun(t, "", "group", "seek", "billing", "--to", "end", "-b", b)
	if d = describeGroup(t, b, "billing"); d.TotalLag != 0 {
		t.Errorf("after seek to end: lag %d", d.TotalLag)
	}
	// The group resumes where it was moved.
	mustRun(t, "", "group", "seek", "billing", "--to", "5", "--topic", "gt", "-b", b)
	if out := mustRun(t, "", "consume", "gt", "-g", "billing", "-e", "-f", `%v`, "-b", b); out != "f" {
		t.Errorf("consume after seek to 5: %q, want f", out)
	}
	if _, _, err := run(t, "", "group", "seek", "billing", "--to", "sometime", "-b", b); err == nil {
		t.Error("seek to a bad target succeeded")
	}

	out = mustRun(t, "", "group", "delete", "billing", "-b", b)
	if !strings.Contains(out, "deleted group billing") {
		t.Errorf("delete: %q", out)
	}
	out = mustRun(t, "", "group", "list", "-b", b)
	if strings.Contains(out, "billing") {
		t.Errorf("deleted group still listed: %q", out)
	}
	if _, _, err := run(t, "", "group", "describe", "billing", "-b", b); !errors.Is(err, admin.ErrGroupNotFound) {
		t.Errorf("describing a deleted group: %v", err)
	}
}

func describeGroup(t *testing.T, b, g string) admin.GroupDescription {
	t.Helper()
	var d admin.GroupDescription
	out := mustRun(t, "", "group", "describe", g, "--format", "json", "-b", b)
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("group describe --format json: %v\n%s", err, out)
	}
	return d
}

func offsetOf(d admin.GroupDescription, topic string, p int32) int64 {
	for _, o := range d.Offsets {
		if o.Topic == topic && o.Partition == p {
			return o.CurrentOffset
		}
	}
	return -2
}

// TestGroupCommandsUnsupported checks the message a broker without the
// group APIs gets; it skips once the broker has them.
func TestGroupCommandsUnsupported(t *testing.T) {
	b := broker(t)
	_, _, err := run(t, "", "group", "list", "-b", b)
	if err == nil {
		t.Skip("the broker supports consumer groups")
	}
	if !errors.Is(err, admin.ErrGroupsUnsupported) {
		t.Errorf("group list: %v", err)
	}
}
