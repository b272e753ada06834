package cli

import (
	"strings"
	"testing"
)

// TestUserCommands: user create/list/delete over PLAINTEXT, then the new
// user authenticates on the SASL_PLAINTEXT listener with --user/--password
// (each mechanism) and with the BROKERD_* variables.
func TestUserCommands(t *testing.T) {
	plain := broker(t)
	sasl := saslBroker(t)

	out := mustRun(t, "", "user", "create", "cli-alice", "--new-password", "pw-alice-1", "-b", plain)
	if !strings.Contains(out, "created user cli-alice (SCRAM-SHA-256, 4096 iterations)") {
		t.Fatalf("create: %q", out)
	}
	out = mustRun(t, "pw-alice-2\n", "user", "create", "cli-alice", "--new-password", "-", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", "-b", plain)
	if !strings.Contains(out, "SCRAM-SHA-512, 8192 iterations") {
		t.Fatalf("create 512: %q", out)
	}
	if _, _, err := run(t, "", "user", "create", "cli-alice", "--new-password", "x", "-b", plain); err == nil || !strings.Contains(err.Error(), "--update") {
		t.Fatalf("create over an existing user: %v", err)
	}
	out = mustRun(t, "", "user", "list", "-b", plain)
	for _, want := range []string{"USER", "cli-alice  SCRAM-SHA-256  4096", "cli-alice  SCRAM-SHA-512  8192"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}

	// The new user authenticates with each mechanism.
	for _, c := range []struct{ mech, pw string }{
		{"", "pw-alice-1"}, {"SCRAM-SHA-512", "pw-alice-2"}, {"PLAIN", "pw-alice-2"},
	} {
		args := []string{"topic", "list", "-b", sasl, "--user", "cli-alice", "--password", c.pw}
		if c.mech != "" {
			args = append(args, "--sasl-mechanism", c.mech)
		}
		if out := mustRun(t, "", args...); !strings.Contains(out, "NAME") {
			t.Fatalf("topic list as cli-alice (%s): %q", c.mech, out)
		}
	}
	mustRun(t, "", "topic", "create", "cli-sasl-records", "-p", "1", "-b", plain)
	t.Setenv("BROKERD_USER", "cli-alice")
	t.Setenv("BROKERD_PASSWORD", "pw-alice-2")
	t.Setenv("BROKERD_SASL_MECHANISM", "scram-sha-512")
	mustRun(t, "", "topic", "list", "-b", sasl, "--timeout", "10s")
	mustRun(t, "over sasl\n", "produce", "cli-sasl-records", "-b", sasl)
	if out := mustRun(t, "", "consume", "cli-sasl-records", "-o", "start", "-e", "-b", sasl); !strings.Contains(out, "over sasl") {
		t.Fatalf("consume over SASL: %q", out)
	}

	// A wrong password: the error names the mechanism and the user, never
	// the password.
	_, _, err := run(t, "", "topic", "list", "-b", sasl, "--user", "cli-alice", "--password", "wrong-pw-xyz", "--timeout", "10s")
	if err == nil {
		t.Fatal("a wrong password listed topics")
	}
	msg := err.Error()
	t.Logf("wrong password: %s", msg)
	if !strings.Contains(msg, "SCRAM-SHA-512") || !strings.Contains(msg, `"cli-alice"`) || strings.Contains(msg, "wrong-pw-xyz") {
		t.Fatalf("wrong-password error: %s", msg)
	}

	// Password change, then delete.
	t.Setenv("BROKERD_USER", "")
	t.Setenv("BROKERD_PASSWORD", "")
	t.Setenv("BROKERD_SASL_MECHANISM", "")
	mustRun(t, "", "user", "create", "cli-alice", "--new-password", "pw-alice-3", "--update", "-b", plain)
	mustRun(t, "", "topic", "list", "-b", sasl, "--user", "cli-alice", "--password", "pw-alice-3")
	out = mustRun(t, "", "user", "delete", "cli-alice", "--mechanism", "SCRAM-SHA-256", "-b", plain)
	if !strings.Contains(out, "deleted user cli-alice (SCRAM-SHA-256)") {
		t.Fatalf("delete one: %q", out)
	}
	out = mustRun(t, "", "user", "delete", "cli-alice", "-b", plain)
	if !strings.Contains(out, "deleted user cli-alice (SCRAM-SHA-512)") {
		t.Fatalf("delete all: %q", out)
	}
	if _, _, err := run(t, "", "user", "delete", "cli-alice", "-b", plain); err == nil || !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("delete a missing user: %v", err)
	}
	if out := mustRun(t, "", "user", "list", "-b", plain); strings.Contains(out, "cli-alice") {
		t.Fatalf("deleted user still listed:\n%s", out)
	}
	if _, _, err := run(t, "", "topic", "list", "-b", sasl, "--user", "cli-alice", "--password", "pw-alice-3", "--timeout", "10s"); err == nil {
		t.Fatal("a deleted user authenticated")
	}
}

// TestSASLFlagErrors: flag combinations refused before connecting.
func TestSASLFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--password", "p"}, "need --user"},
		{[]string{"--user", "u"}, "give --password"},
		{[]string{"--user", "u", "--password", "p", "--sasl-mechanism", "GSSAPI"}, "want PLAIN"},
	} {
		t.Setenv("BROKERD_PASSWORD", "")
		_, _, err := run(t, "", append([]string{"topic", "list", "-b", "127.0.0.1:1"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
