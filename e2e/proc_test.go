package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// goTool finds the go command: on PATH, else under GOROOT.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	for _, root := range []string{os.Getenv("GOROOT"), "/usr/local/go"} {
		if root == "" {
			continue
		}
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no go command on PATH or under GOROOT")
}

// brokerdBinary builds cmd/brokerd once per test binary (or uses
// $BROKERD_BIN) and returns its path.
func brokerdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("BROKERD_BIN"); p != "" {
			binPath = p
			return
		}
		gobin, err := goTool()
		if err != nil {
			buildErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "brokerd-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "brokerd")
		cmd := exec.Command(gobin, "build", "-o", binPath, "github.com/brokerd/brokerd/cmd/brokerd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/brokerd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build brokerd: %v", buildErr)
	}
	return binPath
}

// brokerProc is a brokerd subprocess with fixed ports and data dir, so it
// can be killed and restarted in place.
type brokerProc struct {
	t                              testing.TB
	bin, dataDir, logPath          string
	kafkaPort, adminPort, raftPort int
	cmd                            *exec.Cmd
	exited                         chan struct{}
	waitErr                        error
	starts                         int
	logFile                        *os.File
	extraArgs                      []string
	launched                       time.Time
	portRetries                    int
}

func newBrokerProc(t testing.TB) *brokerProc {
	t.Helper()
	dir := t.TempDir()
	b := &brokerProc{
		t:         t,
		bin:       brokerdBinary(t),
		dataDir:   filepath.Join(dir, "data"),
		logPath:   filepath.Join(dir, "brokerd.log"),
		kafkaPort: freePort(t),
		adminPort: freePort(t),
		raftPort:  freePort(t),
	}
	f, err := os.Create(b.logPath)
	if err != nil {
		t.Fatalf("create log file: %v", err)
	}
	b.logFile = f
	dumpOnFailure(t, "brokerd process log", func() string {
		data, _ := os.ReadFile(b.logPath)
		return string(data)
	})
	t.Cleanup(func() {
		if b.running() {
			b.cmd.Process.Kill()
			<-b.exited
		}
		f.Close()
	})
	return b
}

func (b *brokerProc) kafkaAddr() string { return "127.0.0.1:" + strconv.Itoa(b.kafkaPort) }
func (b *brokerProc) adminAddr() string { return "127.0.0.1:" + strconv.Itoa(b.adminPort) }

func (b *brokerProc) running() bool {
	if b.cmd == nil {
		return false
	}
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

// start launches brokerd and waits until /readyz answers 200.
func (b *brokerProc) start() {
	b.t.Helper()
	b.launch()
	b.waitReady(60 * time.Second)
}

// portTaken tells whether the last start failed because its Kafka or
// admin listener's port was in use (the raft port, which peers know, is
// not changed by a retry). It gives up after a few retries.
func (b *brokerProc) portTaken() bool {
	if b.portRetries >= 3 {
		return false
	}
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return false
	}
	last := string(data)
	if i := strings.LastIndex(last, "===== e2e: start #"); i >= 0 {
		last = last[i:]
	}
	for _, addr := range []string{b.kafkaAddr(), b.adminAddr()} {
		if strings.Contains(last, "listen tcp "+addr+": bind: address already in use") {
			b.portRetries++
			return true
		}
	}
	return false
}

// launch starts the brokerd process without waiting for it.
func (b *brokerProc) launch() {
	b.t.Helper()
	if b.running() {
		b.t.Fatalf("brokerd already running")
	}
	b.starts++
	fmt.Fprintf(b.logFile, "\n===== e2e: start #%d at %s =====\n", b.starts, time.Now().Format(time.RFC3339Nano))
	args := []string{
		"--data-dir", b.dataDir,
		"--kafka-addr", b.kafkaAddr(),
		"--admin-addr", b.adminAddr(),
		"--raft-addr", "127.0.0.1:" + strconv.Itoa(b.raftPort),
	}
	args = append(args, b.extraArgs...)
	cmd := exec.Command(b.bin, args...)
	cmd.Stdout = b.logFile
	cmd.Stderr = b.logFile
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start brokerd: %v", err)
	}
	b.cmd = cmd
	b.exited = make(chan struct{})
	b.launched = time.Now()
	go func() {
		b.waitErr = cmd.Wait()
		close(b.exited)
	}()
}

// waitReady waits until the launched process answers /readyz with 200.
func (b *brokerProc) waitReady(limit time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: time.Second}
	var err error
	for {
		select {
		case <-b.exited:
			if b.portTaken() {
				// Another process (often a connection's ephemeral source
				// port) took a port freePort handed out: take new Kafka
				// and admin ports and start again.
				b.t.Logf("brokerd start #%d: a listener's port was taken; retrying with new ports", b.starts)
				b.kafkaPort, b.adminPort = freePort(b.t), freePort(b.t)
				b.launch()
				continue
			}
			b.t.Fatalf("brokerd (start #%d) exited before it was ready: %v", b.starts, b.waitErr)
		default:
		}
		var resp *http.Response
		resp, err = hc.Get("http://" + b.adminAddr() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				b.t.Logf("brokerd start #%d ready after %s", b.starts, time.Since(b.launched).Round(time.Millisecond))
				return
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("brokerd (start #%d) not ready after %s (last: %v)", b.starts, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (b *brokerProc) kill() {
	b.t.Helper()
	if !b.running() {
		b.t.Fatalf("kill: brokerd is not running (exit: %v)", b.waitErr)
	}
	fmt.Fprintf(b.logFile, "\n===== e2e: SIGKILL at %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.t.Fatalf("SIGKILL brokerd: %v", err)
	}
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.t.Fatalf("brokerd still running 10s after SIGKILL")
	}
}

// term sends SIGTERM and returns the exit code once the process exits.
func (b *brokerProc) term(timeout time.Duration) int {
	b.t.Helper()
	if !b.running() {
		b.t.Fatalf("term: brokerd is not running (exit: %v)", b.waitErr)
	}
	fmt.Fprintf(b.logFile, "\n===== e2e: SIGTERM at %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatalf("SIGTERM brokerd: %v", err)
	}
	select {
	case <-b.exited:
	case <-time.After(timeout):
		b.cmd.Process.Kill()
		<-b.exited
		b.t.Fatalf("brokerd did not exit within %s of SIGTERM (killed it)", timeout)
	}
	return b.cmd.ProcessState.ExitCode()
}

// logTail returns the end of the process log.
func (b *brokerProc) logTail(n int) string {
	data, _ := os.ReadFile(b.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(bytes.TrimSpace(data))
}

// waitCtx is a helper for bounded waits in subprocess tests.
func waitCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// TestPortTakenRetry: a brokerd whose admin port another process holds is
// started again on new ports instead of failing the test.
func TestPortTakenRetry(t *testing.T) {
	b := newBrokerProc(t)
	l, err := net.Listen("tcp", b.adminAddr())
	if err != nil {
		t.Skipf("cannot hold the admin port: %v", err)
	}
	defer l.Close()
	b.start()
	if b.portRetries != 1 {
		t.Fatalf("%d retries, want 1", b.portRetries)
	}
}
