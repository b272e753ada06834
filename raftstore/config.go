package raftstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/topic"
)

// Peer is a raft voter: its node id and raft address.
type Peer struct {
	ID   int32
	Addr string
}

// Config configures a Store.
type Config struct {
	NodeID  int32
	DataDir string
	// RaftAddr is raft's listener; RaftAdvertise, if set, is the address
	// peers dial (default RaftAddr).
	RaftAddr      string
	RaftAdvertise string
	// Peers is the static bootstrap membership, this node included. Empty
	// means a one-member group of this node.
	Peers []Peer
	// RaftDial overrides, for the peers it lists, the address this node
	// dials instead of the one in raft's configuration (a NAT, a proxy).
	RaftDial []Peer
	// RaftTLS, if set, runs raft's connections over mutual TLS with its
	// certificates (it must require client certificates); nil: plaintext.
	RaftTLS *tlsconf.Server
	// AskHeld, if set, asks a follower which of a snapshot's segment
	// files it already holds (Store.HeldSegments on that node), so that
	// an install does not send them again (dedupe.go).
	AskHeld func(ctx context.Context, node int32, want []HeldFile) ([]HeldFile, error)
	// Join means the node joins a running cluster: with no raft state yet
	// it does not bootstrap; the leader adds it and sends it a snapshot.
	Join bool
	// Broker is this node's Kafka identity, registered in the FSM.
	Broker BrokerInfo
	// ClusterID is this node's own cluster id (its meta.properties); the
	// first leader makes it the cluster's.
	ClusterID string
	// Defaults are broker-level topic config defaults.
	Defaults topic.Defaults
	// LogStore picks raft's log store: "wal" (default) or "boltdb".
	LogStore string
	// ApplyTimeout bounds how long a proposal waits to be enqueued.
	ApplyTimeout time.Duration
	// CheckpointInterval is how often the FSM makes its state durable
	// (default 1s); it bounds the raft log a restart replays.
	CheckpointInterval time.Duration
	// RetentionCheckInterval is log.retention.check.interval.ms (default 5m).
	RetentionCheckInterval time.Duration
	// TxnTimeoutCheckInterval is how often the leader looks for
	// transactions past transaction.timeout.ms (Kafka's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms, 10s).
	TxnTimeoutCheckInterval time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms (default 1 day),
	// TransactionalIDExpiration transactional.id.expiration.ms (7 days),
	// and ProducerExpirationCheck producer.id.expiration.check.interval.ms
	// (10 min): see expire.go.
	ProducerIDExpiration      time.Duration
	TransactionalIDExpiration time.Duration
	ProducerExpirationCheck   time.Duration
	// SnapshotBytes and SnapshotInterval decide when the store asks raft
	// for a snapshot (snapshot_policy.go): after this many record bytes,
	// or this long after the last one if anything was applied since.
	SnapshotBytes    int64
	SnapshotInterval time.Duration
	// WALSegmentBytes is the size of raft-wal's segment files; 0 sizes
	// them from the data directory's filesystem (walsize.go).
	WALSegmentBytes int
	// MaxProposalBytes bounds the bytes of produce commands and processor
	// steps handed to raft and not yet applied (proposals.go); 0 is
	// DefaultProposalBytes.
	MaxProposalBytes int64
	// MinFreeBytes is the free space to keep on the data directory's
	// filesystem (brokerd.storage.min.free.bytes): below it, writes are
	// refused with ErrStorage. 0 sizes it from the filesystem (space.go).
	MinFreeBytes int64
	// SnapshotThreshold and TrailingLogs tune raft's log trimming.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// TrailingBytes bounds the trailing entries by their record bytes as
	// well: with large entries, fewer than TrailingLogs are kept.
	TrailingBytes int64
	// VerifyBytesPerSec paces the background verification of the data
	// the partition logs trusted at start (verify.go): 0 means
	// DefaultVerifyBytesPerSec, a negative rate no pacing.
	VerifyBytesPerSec int64
	Logger            *slog.Logger
}

func (c *Config) setDefaults() {
	if c.NodeID == 0 {
		c.NodeID = 1
	}
	if c.LogStore == "" {
		c.LogStore = "wal"
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 10 * time.Second
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = time.Second
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = 5 * time.Minute
	}
	if c.TxnTimeoutCheckInterval == 0 {
		c.TxnTimeoutCheckInterval = 10 * time.Second
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if c.TransactionalIDExpiration <= 0 {
		c.TransactionalIDExpiration = DefaultTransactionalIDExpiration
	}
	if c.ProducerExpirationCheck <= 0 {
		c.ProducerExpirationCheck = DefaultProducerExpirationCheck
	}
	if c.SnapshotBytes <= 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 4096
	}
	if c.TrailingBytes <= 0 {
		c.TrailingBytes = DefaultTrailingBytes
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 1024
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RaftAdvertise == "" {
		c.RaftAdvertise = c.RaftAddr
	}
}
