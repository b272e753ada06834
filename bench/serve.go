package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The in-process targets (brokerd, kfake) run in a child process of the
// bench binary, so that the server's CPU time is measured apart from the
// clients'. The child is this binary with -serve TARGET: it starts the
// target, prints its address on a line of stdout, and serves until its
// stdin closes.

// serveChild is the child's side.
func serveChild(o Options) error {
	var t Target
	switch o.Serve {
	case "brokerd":
		t = brokerdTarget{dir: o.DataDir, verbose: o.Verbose}
	case "kfake":
		t = kfakeTarget{}
	default:
		return fmt.Errorf("-serve: unknown target %q", o.Serve)
	}
	stopProfile, err := startProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	srv, err := t.Start(context.Background())
	if err != nil {
		stopProfile()
		return err
	}
	fmt.Println(srv.Addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Stop()
	stopProfile()
	return nil
}

// processTarget runs inner in a child process.
type processTarget struct {
	inner   string
	o       Options
	profile func() string // the child's CPU profile path, "" for none
}

func (t processTarget) Name() string { return t.inner }

func (t processTarget) Start(ctx context.Context) (Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return Server{}, fmt.Errorf("bench executable: %w", err)
	}
	// The child's data goes in a directory of the parent's, removed once
	// the child has exited, even when it had to be killed.
	work, err := os.MkdirTemp(t.o.DataDir, "bench-serve-*")
	if err != nil {
		return Server{}, fmt.Errorf("bench server directory: %w", err)
	}
	args := []string{"-serve", t.inner, "-dir", work}
	if t.o.Verbose {
		args = append(args, "-v")
	}
	if p := t.profile(); p != "" {
		args = append(args, "-cpuprofile", p)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Server{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Server{}, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(work)
		return Server{}, fmt.Errorf("start %s server: %w", t.inner, err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(work)
		return Server{}, fmt.Errorf("%s server did not report its address: %w", t.inner, err)
	}
	pid := cmd.Process.Pid
	stop := func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(work)
	}
	cpu := func() (time.Duration, bool) {
		d, err := processCPU(pid)
		return d, err == nil
	}
	return Server{Addr: strings.TrimSpace(line), Stop: stop, CPU: cpu}, nil
}

// processCPU is a process's user and system CPU time so far, from
// /proc/PID/stat (in clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc stat format")
	}
	// utime and stime are fields 14 and 15 of the whole line, 12 and 13
	// after the command name.
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+st) * 10 * time.Millisecond, nil
}

type serverCPUKey struct{}

// withServerCPU gives the workload's phases a way to read the server's
// CPU time.
func withServerCPU(ctx context.Context, cpu func() (time.Duration, bool)) context.Context {
	return context.WithValue(ctx, serverCPUKey{}, cpu)
}

// serverCPU reads the server's CPU time, when the run knows it.
func serverCPU(ctx context.Context) (time.Duration, bool) {
	if f, ok := ctx.Value(serverCPUKey{}).(func() (time.Duration, bool)); ok && f != nil {
		return f()
	}
	return 0, false
}
