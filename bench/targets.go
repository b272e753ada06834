package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A Target is a broker to measure. Start brings up a fresh one (or
// returns the address of an external one).
type Target interface {
	Name() string
	Start(ctx context.Context) (Server, error)
}

// Server is a started target: its address(es), comma-separated, how to
// stop it, and, when it runs in a process of its own, its CPU time so far.
type Server struct {
	Addr string
	Stop func()
	CPU  func() (time.Duration, bool)
}

// brokerdTarget starts a single-node brokerd in this process, in a fresh
// temporary data directory that is removed when it stops.
type brokerdTarget struct {
	dir     string
	verbose bool
}

func (brokerdTarget) Name() string { return "brokerd" }

func (t brokerdTarget) Start(ctx context.Context) (Server, error) {
	dir, err := os.MkdirTemp(t.dir, "brokerd-bench-*")
	if err != nil {
		return Server{}, fmt.Errorf("brokerd data dir: %w", err)
	}
	cfg := node.DefaultConfig()
	cfg.DataDir = dir
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.AdminAddr = ""
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if t.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return Server{}, fmt.Errorf("start brokerd: %w", err)
	}
	return Server{Addr: n.KafkaAddr(), Stop: func() {
		n.Close()
		os.RemoveAll(dir)
	}}, nil
}

// kfakeTarget is franz-go's in-memory fake cluster with one broker: the
// peer every other figure is compared against.
type kfakeTarget struct{}

func (kfakeTarget) Name() string { return "kfake" }

func (kfakeTarget) Start(context.Context) (Server, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return Server{}, fmt.Errorf("start kfake: %w", err)
	}
	return Server{Addr: c.ListenAddrs()[0], Stop: c.Close}, nil
}

// externalTarget is a broker someone else runs; seeds is a comma-separated
// list of host:port.
type externalTarget struct{ seeds string }

func (externalTarget) Name() string { return "external" }

func (t externalTarget) Start(context.Context) (Server, error) {
	return Server{Addr: t.seeds, Stop: func() {}}, nil
}
