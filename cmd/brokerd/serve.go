package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/raftstore"
)

// serveFlags are the flags of `brokerd` (serve).
type serveFlags struct {
	cfg       node.Config
	peers     string
	logLevel  string
	logFormat string
	grace     time.Duration
}

func newRootCmd() *cobra.Command {
	f := &serveFlags{cfg: node.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "brokerd",
		Short: "A Kafka-compatible broker with raft replication and stream processing",
		Long: "brokerd serves the Kafka protocol on --kafka-addr. With no flags it runs one node\n" +
			"with its data in ./brokerd-data, listening on 127.0.0.1 only.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cfg.DataDir, "data-dir", f.cfg.DataDir, "where the data lives (Kafka's log.dirs)")
	fl.StringVar(&f.cfg.KafkaAddr, "kafka-addr", f.cfg.KafkaAddr, "the Kafka listener (also advertised unless --advertised-addr is given)")
	fl.StringVar(&f.cfg.AdvertisedAddr, "advertised-addr", "", "the host:port clients are told to connect to")
	fl.StringVar(&f.cfg.AdminAddr, "admin-addr", f.cfg.AdminAddr, "the admin HTTP listener (health, readiness, pprof); empty disables it")
	fl.Int32Var(&f.cfg.NodeID, "node-id", f.cfg.NodeID, "this node's id")
	fl.StringVar(&f.cfg.RaftAddr, "raft-addr", f.cfg.RaftAddr, "raft's listener")
	fl.StringVar(&f.peers, "peers", "", "static raft membership for a new cluster: id@raft-host:port,... (this node included)")
	fl.BoolVar(&f.cfg.AutoCreateTopics, "auto-create-topics", f.cfg.AutoCreateTopics, "auto.create.topics.enable")
	fl.Int32Var(&f.cfg.NumPartitions, "num-partitions", f.cfg.NumPartitions, "num.partitions for auto-created topics")
	fl.StringVar(&f.cfg.LogStore, "raft-log-store", "wal", "raft's log store: wal or boltdb")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fl.DurationVar(&f.grace, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for requests in flight")
	return cmd
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// parsePeers reads "1@host:port,2@host:port".
func parsePeers(s string) ([]raftstore.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var out []raftstore.Peer
	for _, p := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "@")
		if !ok || addr == "" {
			return nil, fmt.Errorf("--peers entry %q: want id@host:port", p)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--peers entry %q: bad node id", p)
		}
		out = append(out, raftstore.Peer{ID: int32(n), Addr: addr})
	}
	return out, nil
}

func serve(ctx context.Context, f *serveFlags) error {
	logger, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(logger)
	if f.cfg.Peers, err = parsePeers(f.peers); err != nil {
		return err
	}
	f.cfg.Logger = logger
	if ctx == nil {
		ctx = context.Background()
	}
	n, err := node.Start(ctx, f.cfg)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	sig := <-sigs
	logger.Info("shutting down", "signal", sig.String(), "timeout", f.grace)
	go func() {
		<-sigs
		logger.Warn("second signal: exiting now")
		os.Exit(1)
	}()
	sctx, cancel := context.WithTimeout(context.Background(), f.grace)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped cleanly")
	return nil
}
