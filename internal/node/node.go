package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// Config is everything one brokerd process needs.
type Config struct {
	NodeID  int32
	DataDir string
	// KafkaAddr is the Kafka listener; AdvertisedAddr, if set, is what
	// Metadata tells clients (default: the bound Kafka address).
	KafkaAddr      string
	AdvertisedAddr string
	// AdminAddr is the admin HTTP listener; empty disables it.
	AdminAddr string
	RaftAddr  string
	Peers     []raftstore.Peer

	AutoCreateTopics         bool
	NumPartitions            int32
	DefaultReplicationFactor int16
	// TopicDefaults are broker-level topic config defaults, keyed by topic
	// config name (retention.ms, segment.bytes, ...).
	TopicDefaults topic.Defaults
	// LogStore is raft's log store, "wal" or "boltdb".
	LogStore string
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Wire tunes the Kafka listener (caps, budgets, timeouts); Addr is set
	// from KafkaAddr.
	Wire   wire.Config
	Logger *slog.Logger
}

// DefaultConfig is what `brokerd` with no flags runs.
func DefaultConfig() Config {
	return Config{
		NodeID:           1,
		DataDir:          "./brokerd-data",
		KafkaAddr:        "127.0.0.1:9092",
		AdminAddr:        "127.0.0.1:9644",
		RaftAddr:         "127.0.0.1:33145",
		AutoCreateTopics: true,
		NumPartitions:    1,
	}
}

// Node is a running brokerd.
type Node struct {
	cfg      Config
	logger   *slog.Logger
	store    *raftstore.Store
	broker   *broker.Broker
	kafka    *wire.Server
	admin    *http.Server
	adminL   net.Listener
	done     chan struct{}
	serveErr chan error
}

// Start recovers the data directory, starts raft, waits for a leader, and
// opens the Kafka and admin listeners.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeID <= 0 {
		return nil, fmt.Errorf("node id must be positive, got %d", cfg.NodeID)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if err := cfg.TopicDefaults.Validate(); err != nil {
		return nil, fmt.Errorf("broker topic defaults: %w", err)
	}
	clusterID, err := loadOrCreateMeta(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, logger: cfg.Logger, done: make(chan struct{}), serveErr: make(chan error, 2)}

	wcfg := cfg.Wire
	wcfg.Addr = cfg.KafkaAddr
	wcfg.Logger = cfg.Logger.With("component", "kafka")
	// The listener is bound before raft starts so that the advertised
	// address (with a resolved :0 port) can be registered.
	var b *broker.Broker
	n.kafka = wire.NewServer(wcfg, func(key int16) (int16, int16, bool) { return b.Versions(key) },
		func(ctx context.Context, r *wire.Request) (kmsgResponse, error) { return b.Handle(ctx, r) })
	if err := n.kafka.Listen(); err != nil {
		return nil, fmt.Errorf("kafka listener on %s: %w", cfg.KafkaAddr, err)
	}
	adv := cfg.AdvertisedAddr
	if adv == "" {
		adv = n.kafka.Addr().String()
	}
	host, portStr, err := net.SplitHostPort(adv)
	if err != nil {
		n.kafka.Close()
		return nil, fmt.Errorf("advertised address %q: %w", adv, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		n.kafka.Close()
		return nil, fmt.Errorf("advertised port %q: %w", portStr, err)
	}

	n.store, err = raftstore.Open(raftstore.Config{
		NodeID:                 cfg.NodeID,
		DataDir:                cfg.DataDir,
		RaftAddr:               cfg.RaftAddr,
		Peers:                  cfg.Peers,
		Broker:                 raftstore.BrokerInfo{NodeID: cfg.NodeID, Host: host, Port: int32(port)},
		Defaults:               cfg.TopicDefaults,
		LogStore:               cfg.LogStore,
		RetentionCheckInterval: cfg.RetentionCheckInterval,
		Logger:                 cfg.Logger,
	})
	if err != nil {
		n.kafka.Close()
		return nil, err
	}
	b = broker.New(broker.Config{
		NodeID:                   cfg.NodeID,
		ClusterID:                clusterID,
		DataDir:                  cfg.DataDir,
		AutoCreateTopics:         cfg.AutoCreateTopics,
		NumPartitions:            cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		Logger:                   cfg.Logger,
	}, n.store)
	n.broker = b

	if cfg.AdminAddr != "" {
		if err := n.startAdmin(); err != nil {
			n.closeStarted()
			return nil, err
		}
	}
	if len(cfg.Peers) <= 1 {
		// One node: it leads as soon as raft has started; wait so the
		// first client request does not bounce.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := n.store.WaitLeader(wctx)
		cancel()
		if err != nil {
			n.closeStarted()
			return nil, err
		}
	}
	go func() { n.serveErr <- n.kafka.Serve() }()
	n.logger.Info("brokerd started", "node_id", cfg.NodeID, "kafka", n.kafka.Addr().String(), "advertised", adv,
		"admin", n.AdminAddr(), "raft", cfg.RaftAddr, "data_dir", cfg.DataDir, "cluster_id", clusterID)
	return n, nil
}

// KafkaAddr is the bound Kafka listener address.
func (n *Node) KafkaAddr() string { return n.kafka.Addr().String() }

// AdminAddr is the bound admin listener address, or "".
func (n *Node) AdminAddr() string {
	if n.adminL == nil {
		return ""
	}
	return n.adminL.Addr().String()
}

// Store exposes the raft store (for tests and the admin endpoints).
func (n *Node) Store() *raftstore.Store { return n.store }

// Shutdown stops accepting, lets requests in flight finish (bounded by
// ctx), then stops raft and checkpoints the state.
func (n *Node) Shutdown(ctx context.Context) error {
	var errs []error
	if err := n.kafka.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("kafka listener: %w", err))
	}
	if n.admin != nil {
		if err := n.admin.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("admin listener: %w", err))
		}
	}
	if err := n.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("raft store: %w", err))
	}
	return errors.Join(errs...)
}

// Close shuts down with a short grace period.
func (n *Node) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Shutdown(ctx)
}

func (n *Node) closeStarted() {
	n.kafka.Close()
	if n.admin != nil {
		n.admin.Close()
	}
	if n.store != nil {
		n.store.Close()
	}
}
