package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerd/brokerd/clients/admin"
	"github.com/brokerd/brokerd/internal/node"
)

// The CLI tests share one in-process broker, started on first use; each
// test uses its own topic and group names.
var (
	sharedOnce sync.Once
	sharedNode *node.Node
	sharedErr  error
	sharedDir  string
	sharedLogs = &lockedBuffer{}
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedNode != nil {
		if err := sharedNode.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close shared node:", err)
			code = 1
		}
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// broker returns the address of the shared in-process broker.
func broker(t *testing.T) string {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "brokerd-cli-test-")
		if sharedErr != nil {
			return
		}
		cfg := node.DefaultConfig()
		cfg.DataDir = sharedDir
		cfg.KafkaAddr, cfg.AdminAddr, cfg.RaftAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		// PLAINTEXT first (KafkaAddr); SASL_PLAINTEXT for the --user tests.
		cfg.Listeners = []node.Listener{
			{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SASL_PLAINTEXT", Protocol: node.ProtocolSASLPlaintext, Addr: "127.0.0.1:0"},
		}
		cfg.SASLMechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}
		cfg.GroupInitialRebalanceDelay = -1
		cfg.Logger = slog.New(slog.NewTextHandler(sharedLogs, nil))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sharedNode, sharedErr = node.Start(ctx, cfg)
	})
	if sharedErr != nil {
		t.Fatalf("start broker: %v\n%s", sharedErr, sharedLogs.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker logs (tail):\n%s", tail(sharedLogs.String(), 4000))
		}
	})
	return sharedNode.KafkaAddr()
}

// saslBroker returns the shared broker's SASL_PLAINTEXT address.
func saslBroker(t *testing.T) string {
	t.Helper()
	broker(t)
	return sharedNode.ListenerAddr("SASL_PLAINTEXT")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// run executes `brokerd args...` in-process with stdin and returns stdout
// and stderr.
func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// mustRun is run that fails the test on an error.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, stdin, args...)
	if err != nil {
		t.Fatalf("brokerd %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// requireGroups skips the test unless the broker advertises the
// consumer-group APIs.
func requireGroups(t *testing.T, addr string) {
	t.Helper()
	c, err := admin.New([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.CheckGroupSupport(ctx); err != nil {
		if errors.Is(err, admin.ErrGroupsUnsupported) {
			t.Skipf("skipping: %v", err)
		}
		t.Fatal(err)
	}
}
