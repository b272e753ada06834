package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	brokerpkg "github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/clients/admin"
	"github.com/brokerd/brokerd/internal/node"
)

func TestACLCommands(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(&strings.Builder{}, nil))
	cfg.Authorizer = brokerpkg.AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:ANONYMOUS"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	b := n.KafkaAddr()

	out := mustRun(t, "", "acl", "create", "--allow-principal", "User:bob", "--operation", "read,describe", "--operation", "write", "--topic", "orders", "-b", b)
	if strings.Count(out, "User:bob") != 3 || !strings.Contains(out, "PRINCIPAL") {
		t.Fatalf("create printed %q", out)
	}
	mustRun(t, "", "acl", "create", "--deny-principal", "User:eve", "--deny-host", "10.0.0.1", "--operation", "all", "--topic", "ord", "--resource-pattern-type", "prefixed", "-b", b)
	mustRun(t, "", "acl", "create", "--allow-principal", "User:bob", "--operation", "read", "--group", "g", "--transactional-id", "tx", "--cluster", "-b", b)

	list := func(args ...string) []admin.ACL {
		t.Helper()
		var acls []admin.ACL
		out := mustRun(t, "", append([]string{"acl", "list", "--format", "json", "-b", b}, args...)...)
		if err := json.Unmarshal([]byte(out), &acls); err != nil {
			t.Fatalf("list output %q: %v", out, err)
		}
		return acls
	}
	if got := list(); len(got) != 7 {
		t.Fatalf("list all: %+v", got)
	}
	if got := list("--topic", "orders", "--resource-pattern-type", "match"); len(got) != 4 {
		t.Fatalf("list matching orders (3 literal + the prefix): %+v", got)
	}
	if got := list("--deny-principal", "User:eve"); len(got) != 1 || got[0].Host != "10.0.0.1" || got[0].Permission != "DENY" {
		t.Fatalf("list eve: %+v", got)
	}
	out = mustRun(t, "", "acl", "delete", "--topic", "orders", "--operation", "write", "-b", b)
	if strings.Count(out, "User:bob") != 1 || !strings.Contains(out, "WRITE") {
		t.Fatalf("delete printed %q", out)
	}
	if got := list(); len(got) != 6 {
		t.Fatalf("after delete: %+v", got)
	}
	if _, _, err := run(t, "", "acl", "delete", "-b", b); err == nil {
		t.Fatal("delete with no flags ran")
	}
	if _, _, err := run(t, "", "acl", "create", "--allow-principal", "User:bob", "--operation", "bogus", "--topic", "x", "-b", b); err == nil {
		t.Fatal("an unknown operation was accepted")
	}
}
