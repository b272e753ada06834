package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A Target is a broker to measure. Start brings up a fresh one (or
// returns the address of an external one) and a function that stops it.
type Target interface {
	Name() string
	Start(ctx context.Context) (addr string, stop func(), err error)
}

// brokerdTarget starts a single-node brokerd in this process, in a fresh
// temporary data directory that is removed when it stops.
type brokerdTarget struct {
	dir     string
	verbose bool
}

func (brokerdTarget) Name() string { return "brokerd" }

func (t brokerdTarget) Start(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp(t.dir, "brokerd-bench-*")
	if err != nil {
		return "", nil, fmt.Errorf("brokerd data dir: %w", err)
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
		return "", nil, fmt.Errorf("start brokerd: %w", err)
	}
	return n.KafkaAddr(), func() {
		n.Close()
		os.RemoveAll(dir)
	}, nil
}

// kfakeTarget is franz-go's in-memory fake cluster with one broker: the
// peer every other figure is compared against.
type kfakeTarget struct{}

func (kfakeTarget) Name() string { return "kfake" }

func (kfakeTarget) Start(context.Context) (string, func(), error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return "", nil, fmt.Errorf("start kfake: %w", err)
	}
	return c.ListenAddrs()[0], c.Close, nil
}

// externalTarget is a broker someone else runs; seeds is a comma-separated
// list of host:port.
type externalTarget struct{ seeds string }

func (externalTarget) Name() string { return "external" }

func (t externalTarget) Start(context.Context) (string, func(), error) {
	return t.seeds, func() {}, nil
}
