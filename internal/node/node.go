package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/broker/throttle"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/metrics"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/processor"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// Config is everything one brokerd process needs.
type Config struct {
	NodeID  int32
	DataDir string
	// KafkaAddr is the Kafka listener; AdvertisedAddr, if set, is what
	// Metadata tells clients (default: the bound Kafka address). They are
	// used when Listeners is empty: one PLAINTEXT listener.
	KafkaAddr      string
	AdvertisedAddr string
	// Listeners are the Kafka listeners (listeners, advertised.listeners,
	// listener.security.protocol.map); the first one's address is
	// KafkaAddr(), and the one older nodes see.
	Listeners []Listener
	// TLS is the SSL listeners' ssl.* settings.
	TLS tlsconf.Config
	// SASLMechanisms is sasl.enabled.mechanisms (nil: SCRAM-SHA-256 and
	// SCRAM-SHA-512).
	SASLMechanisms []string
	// SASLBootstrapUsers are created by the leader at start when absent
	// (brokerd.sasl.bootstrap.users).
	SASLBootstrapUsers []BootstrapUser
	// AdminAddr is the admin HTTP listener; empty disables it.
	AdminAddr string
	// AdminTLS, if set, serves the admin API over TLS
	// (brokerd.admin.tls.*); with a client auth other than none, this
	// node's calls to other nodes' admin API present its certificate.
	AdminTLS *tlsconf.Config
	// RaftTLS, if set, runs raft over mutual TLS (brokerd.raft.tls.*);
	// the trust store is required.
	RaftTLS  *tlsconf.Config
	RaftAddr string
	// RaftAdvertise, if set, is the raft address peers dial (default
	// RaftAddr).
	RaftAdvertise string
	Peers         []raftstore.Peer
	// RaftDial overrides the address this node dials for some peers.
	RaftDial []raftstore.Peer
	// SnapshotBytes, SnapshotInterval and TrailingLogs tune when raft
	// snapshots and how much log it keeps (zero: the defaults).
	SnapshotBytes int64
	// WALSegmentBytes is brokerd.raft.wal.segment.bytes (0: sized from
	// the disk).
	WALSegmentBytes int
	// MinFreeBytes is brokerd.storage.min.free.bytes (0: sized from the
	// disk).
	MinFreeBytes int64
	// AutoInFlightBytes and AutoMaxRequestBytes say that
	// queued.max.request.bytes and socket.request.max.bytes (Wire) are
	// defaults, which a container's memory limit may lower (memlimit.go).
	AutoInFlightBytes, AutoMaxRequestBytes bool
	// MaxProposalBytes bounds the produce bytes in flight to raft (0: the
	// default, or sized from a container's memory limit).
	MaxProposalBytes int64
	SnapshotInterval time.Duration
	TrailingLogs     uint64
	TrailingBytes    int64
	// Join is a member's admin address to join a running cluster through;
	// the node then starts without bootstrapping a group of its own.
	Join string

	// Authorizer is brokerd.authorizer.enabled, super.users and
	// allow.everyone.if.no.acl.found.
	Authorizer broker.AuthorizerConfig

	AutoCreateTopics         bool
	NumPartitions            int32
	DefaultReplicationFactor int16
	// Group coordinator settings, passed to broker.Config; zero takes
	// Kafka's default. GroupInitialRebalanceDelay: negative means none.
	GroupMinSessionTimeout        time.Duration
	GroupMaxSessionTimeout        time.Duration
	GroupInitialRebalanceDelay    time.Duration
	OffsetsRetention              time.Duration
	OffsetsRetentionCheckInterval time.Duration
	OffsetMetadataMaxBytes        int
	// QuotaWindow is quota.window.num and quota.window.size.seconds.
	QuotaWindow throttle.Window
	// ReplicaLag is replica.lag.time.max.ms.
	ReplicaLag time.Duration
	// Rack is broker.rack.
	Rack string
	// ProducerIDExpiration, TransactionalIDExpiration and
	// ProducerExpirationCheck are producer.id.expiration.ms,
	// transactional.id.expiration.ms and
	// producer.id.expiration.check.interval.ms (zero: Kafka's defaults).
	ProducerIDExpiration      time.Duration
	TransactionalIDExpiration time.Duration
	ProducerExpirationCheck   time.Duration
	// FetchSessionSlots is max.incremental.fetch.session.cache.slots in
	// fetchsession.Config's terms: 0 for the default, negative for none.
	FetchSessionSlots int
	// TopicDefaults are broker-level topic config defaults, keyed by topic
	// config name (retention.ms, segment.bytes, ...).
	TopicDefaults topic.Defaults
	// LogStore is raft's log store, "wal" or "boltdb".
	LogStore string
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Wire tunes the Kafka listener (caps, budgets, timeouts); Addr is set
	// from KafkaAddr.
	Wire wire.Config
	// NoPartitionMetrics turns off the per-partition series on /metrics
	// (log size and offsets, per-partition group lag).
	NoPartitionMetrics bool
	// Version is reported by brokerd_build_info.
	Version string
	Logger  *slog.Logger
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
	// removedOnce: the last removal check found the leader saying this
	// node is not a member.
	removedOnce atomic.Bool
	// started is n.store for raft's goroutines, which may run before
	// Open has returned it (askHeld).
	started  atomic.Pointer[raftstore.Store]
	cfg      Config
	logger   *slog.Logger
	store    *raftstore.Store
	broker   *broker.Broker
	kafka    *wire.Server
	tls      *tlsconf.Server // nil without an SSL listener
	raftTLS  *tlsconf.Server // nil: raft in plaintext
	adminTLS *tlsconf.Server // nil: the admin API in plaintext
	// adminHTTP calls other nodes' admin API (https with adminTLS).
	adminHTTP *http.Client
	admin     *http.Server
	adminL    net.Listener
	metrics   *metrics.Metrics
	serveErr  chan error // a listener or the state machine that stopped on its own
	// bgCancel stops the node's background work (registration, the
	// processors).
	bgCancel context.CancelFunc
	// processors runs the processors while this node leads.
	processors  *processor.Manager
	procMetrics *processor.Metrics

	// serving is set once the Kafka listener accepts connections; draining
	// once Shutdown has begun. /readyz reads both.
	serving  atomic.Bool
	draining atomic.Bool

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start recovers the data directory, starts raft, waits for a leader, and
// opens the Kafka and admin listeners.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sizeForMemory(&cfg, cfg.Logger)
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
	n := &Node{cfg: cfg, logger: cfg.Logger, serveErr: make(chan error, 3),
		metrics: metrics.New(metrics.Options{Version: cfg.Version})}

	saslSrv, err := sasl.NewServer(cfg.SASLMechanisms, n.scramLookup)
	if err != nil {
		return nil, fmt.Errorf("sasl.enabled.mechanisms: %w", err)
	}
	if n.raftTLS, n.adminTLS, err = linkTLS(&cfg); err != nil {
		return nil, err
	}
	n.adminHTTP = newAdminClient(n.adminTLS)
	wcfg := cfg.Wire
	if wcfg.Listeners, n.tls, err = wireListeners(&cfg, saslSrv); err != nil {
		return nil, err
	}
	wcfg.Logger = cfg.Logger.With("component", "kafka")
	// The listener is bound before raft starts so that the advertised
	// address (with a resolved :0 port) can be registered.
	var b *broker.Broker
	handler := instrument(func(ctx context.Context, r *wire.Request) (kmsgResponse, error) { return b.Handle(ctx, r) },
		n.metrics, cfg.Logger.With("component", "requests"), newLogLimiter(10*time.Second, 5))
	// With client quotas set, a connection reads one request at a time,
	// so that a throttle holds back what was pipelined behind it.
	wcfg.Throttling = func() bool { return b.QuotaEntities() > 0 }
	n.kafka = wire.NewServer(wcfg, func(key int16) (int16, int16, bool) { return b.Versions(key) }, handler)
	if err := n.kafka.Listen(); err != nil {
		return nil, fmt.Errorf("kafka listeners: %w", err)
	}
	eps, err := endpoints(&cfg, n.kafka, cfg.Logger)
	if err != nil {
		n.kafka.Close()
		return nil, err
	}
	// The admin listener is bound before raft starts too: its address is
	// registered, so that other nodes can forward administration here.
	adminAdv := ""
	if cfg.AdminAddr != "" {
		if n.adminL, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			n.kafka.Close()
			return nil, fmt.Errorf("admin listener on %s: %w", cfg.AdminAddr, err)
		}
		adminAdv = advertisedOf(n.adminL.Addr())
	}

	n.store, err = raftstore.Open(raftstore.Config{
		NodeID:                    cfg.NodeID,
		DataDir:                   cfg.DataDir,
		RaftAddr:                  cfg.RaftAddr,
		RaftAdvertise:             cfg.RaftAdvertise,
		Peers:                     cfg.Peers,
		RaftDial:                  cfg.RaftDial,
		RaftTLS:                   n.raftTLS,
		AskHeld:                   n.askHeld,
		Join:                      cfg.Join != "",
		SnapshotBytes:             cfg.SnapshotBytes,
		WALSegmentBytes:           cfg.WALSegmentBytes,
		MinFreeBytes:              cfg.MinFreeBytes,
		MaxProposalBytes:          cfg.MaxProposalBytes,
		SnapshotInterval:          cfg.SnapshotInterval,
		TrailingLogs:              cfg.TrailingLogs,
		TrailingBytes:             cfg.TrailingBytes,
		Broker:                    selfInfo(cfg, eps, adminAdv),
		ClusterID:                 clusterID,
		Defaults:                  cfg.TopicDefaults,
		LogStore:                  cfg.LogStore,
		RetentionCheckInterval:    cfg.RetentionCheckInterval,
		ProducerIDExpiration:      cfg.ProducerIDExpiration,
		TransactionalIDExpiration: cfg.TransactionalIDExpiration,
		ProducerExpirationCheck:   cfg.ProducerExpirationCheck,
		Logger:                    cfg.Logger,
	})
	if err != nil {
		n.kafka.Close()
		if n.adminL != nil {
			n.adminL.Close()
		}
		return nil, err
	}
	n.started.Store(n.store)
	b = broker.New(broker.Config{
		NodeID:                        cfg.NodeID,
		ClusterID:                     clusterID,
		DataDir:                       cfg.DataDir,
		AutoCreateTopics:              cfg.AutoCreateTopics,
		NumPartitions:                 cfg.NumPartitions,
		DefaultReplicationFactor:      cfg.DefaultReplicationFactor,
		GroupMinSessionTimeout:        cfg.GroupMinSessionTimeout,
		GroupMaxSessionTimeout:        cfg.GroupMaxSessionTimeout,
		GroupInitialRebalanceDelay:    cfg.GroupInitialRebalanceDelay,
		OffsetsRetention:              cfg.OffsetsRetention,
		OffsetsRetentionCheckInterval: cfg.OffsetsRetentionCheckInterval,
		OffsetMetadataMaxBytes:        cfg.OffsetMetadataMaxBytes,
		QuotaWindow:                   cfg.QuotaWindow,
		FetchSessions:                 fetchsession.Config{Slots: cfg.FetchSessionSlots},
		ReplicaLag:                    cfg.ReplicaLag,
		Authorizer:                    cfg.Authorizer,
		Logger:                        cfg.Logger,
	}, n.store)
	n.broker = b
	go func(st *raftstore.Store) {
		// The state machine stopped at a storage error (or a command it
		// cannot read): this node must stop serving.
		select {
		case <-st.Failed():
			n.serveErr <- fmt.Errorf("raft state machine: %w", st.FailErr())
		case <-st.Closing():
		}
	}(n.store)
	n.metrics.RegisterServer(n.kafka.ConnCount, n.kafka.InFlightBytes, wire.SentFromFiles)
	n.metrics.RegisterStore(n.store, !cfg.NoPartitionMetrics)
	n.metrics.RegisterFetchSessions(b.FetchSessionStats)
	n.metrics.RegisterQuotas(b.QuotaStats, b.QuotaEntities)

	n.procMetrics = processor.NewMetrics(n.metrics.Registry(), n.store)
	n.processors = processor.NewManager(n.store, n.logger, n.procMetrics)
	if cfg.AdminAddr != "" {
		if err := n.startAdmin(); err != nil {
			n.closeStarted()
			return nil, err
		}
	}
	if cfg.Join != "" {
		jctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err := n.join(jctx, cfg.Join)
		cancel()
		if err != nil {
			n.closeStarted()
			return nil, err
		}
	} else if len(cfg.Peers) <= 1 {
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
	bg, cancelBG := context.WithCancel(context.Background())
	n.bgCancel = cancelBG
	go n.processors.Run(bg)
	self := selfInfo(cfg, eps, adminAdv)
	if self.Principal, err = n.selfPrincipal(); err != nil {
		cancelBG()
		n.closeStarted()
		return nil, fmt.Errorf("admin TLS: this node's own principal: %w", err)
	}
	go n.registerSelf(bg, self)
	if len(cfg.SASLBootstrapUsers) > 0 {
		go n.bootstrapUsers(bg, cfg.SASLBootstrapUsers)
	}
	go func() {
		if err := n.kafka.Serve(); err != nil {
			n.serveErr <- fmt.Errorf("kafka listener: %w", err)
		}
	}()
	n.serving.Store(true)
	n.logger.Info("brokerd started", "node_id", cfg.NodeID, "kafka", n.kafka.Addr().String(), "advertised", eps,
		"admin", n.AdminAddr(), "raft", cfg.RaftAddr, "data_dir", cfg.DataDir, "cluster_id", clusterID)
	return n, nil
}

// selfInfo is what this node registers: its listeners' advertised
// addresses, the first one also as the address older nodes read.
func selfInfo(cfg Config, eps []raftstore.Endpoint, admin string) raftstore.BrokerInfo {
	return raftstore.BrokerInfo{NodeID: cfg.NodeID, Host: eps[0].Host, Port: eps[0].Port, Admin: admin, Rack: cfg.Rack, Listeners: eps}
}

// KafkaAddr is the bound address of the first Kafka listener.
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

// Metrics is the node's metrics registry, for more collectors.
func (n *Node) Metrics() *metrics.Metrics { return n.metrics }

// Failed delivers an error when a listener stops on its own (not through
// Shutdown or Close), or when the raft state machine stops at a storage
// error: the node no longer serves and should be stopped.
func (n *Node) Failed() <-chan error { return n.serveErr }

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
	if n.broker != nil {
		n.broker.Close()
	}
	if n.store != nil {
		n.store.Close()
	}
}
