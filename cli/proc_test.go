package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The subprocess tests build the binary once (CGO_ENABLED=0, as released),
// or use $BROKERD_BIN when test.sh has built it already.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("BROKERD_BIN"); p != "" {
			binPath = p
			return
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if binDir, binErr = os.MkdirTemp("", "brokerd-cmd-test-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "brokerd")
		cmd := exec.Command(gobin, "build", "-o", binPath, "github.com/brokerd/brokerd/cmd/brokerd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a brokerd subprocess on fixed loopback ports and a data dir, so it
// can be stopped and started again in place.
type proc struct {
	t                    *testing.T
	dataDir, logPath     string
	kafka, admin, raft   string
	cmd                  *exec.Cmd
	exited               chan struct{}
	exitCode             int
	logFile              *os.File
	extraArgs, extraEnvs []string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func newProc(t *testing.T) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{
		t: t, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "brokerd.log"),
		kafka: freeAddr(t), admin: freeAddr(t), raft: freeAddr(t),
	}
	f, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.logFile = f
	t.Cleanup(func() {
		if p.running() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		f.Close()
		if t.Failed() {
			t.Logf("brokerd log (tail):\n%s", tail(p.log(), 6000))
		}
	})
	return p
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start runs brokerd and waits for /readyz.
func (p *proc) start() {
	p.t.Helper()
	args := append([]string{"--data-dir", p.dataDir, "--kafka-addr", p.kafka, "--admin-addr", p.admin,
		"--raft-addr", p.raft, "--log-format", "json"}, p.extraArgs...)
	p.cmd = exec.Command(binary(p.t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logFile, p.logFile
	p.cmd.Env = append(os.Environ(), p.extraEnvs...)
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() {
		err := p.cmd.Wait()
		p.exitCode = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.exitCode = ee.ExitCode()
		} else if err != nil {
			p.exitCode = -1
		}
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, ok := p.readyz(); ok && code == http.StatusOK {
			return
		}
		select {
		case <-p.exited:
			p.t.Fatalf("brokerd exited with %d before it was ready", p.exitCode)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatal("brokerd not ready after 30s")
		}
	}
}

// readyz returns /readyz's status code, if the admin listener answers.
func (p *proc) readyz() (int, bool) {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.admin + "/readyz")
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	return resp.StatusCode, true
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.exitCode
	case <-time.After(d):
		p.t.Fatalf("brokerd still running %v after the signal", d)
		return -1
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
