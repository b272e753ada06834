package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/brokerd/brokerd/broker/throttle"
	"github.com/brokerd/brokerd/internal/node"
)

// Node returns the node configuration the settings describe.
func (c *Config) Node() (node.Config, error) {
	cfg := node.DefaultConfig()
	var err error
	if err := c.listeners(&cfg); err != nil {
		return cfg, err
	}
	cfg.DataDir = c.String("log.dirs")
	cfg.NodeID = int32(c.Int("node.id"))
	cfg.NumPartitions = int32(c.Int("num.partitions"))
	cfg.DefaultReplicationFactor = int16(c.Int("default.replication.factor"))
	cfg.AutoCreateTopics = c.Bool("auto.create.topics.enable")
	cfg.RetentionCheckInterval = c.millis("log.retention.check.interval.ms")
	cfg.Wire.MaxRequestBytes = int32(c.Int("socket.request.max.bytes"))
	cfg.Wire.IdleTimeout = c.millis("connections.max.idle.ms")
	cfg.Wire.MaxInFlightBytes = c.Int("queued.max.request.bytes")
	cfg.AutoInFlightBytes = c.settings["queued.max.request.bytes"].Source == SourceDefault
	cfg.AutoMaxRequestBytes = c.settings["socket.request.max.bytes"].Source == SourceDefault
	cfg.Wire.MaxConnsPerIP = int(c.Int("max.connections.per.ip"))
	cfg.GroupMinSessionTimeout = c.millis("group.min.session.timeout.ms")
	cfg.GroupMaxSessionTimeout = c.millis("group.max.session.timeout.ms")
	if cfg.GroupMinSessionTimeout > cfg.GroupMaxSessionTimeout {
		s := c.settings["group.min.session.timeout.ms"]
		return cfg, badValue(s.Origin, s.Key, s.Value, fmt.Errorf("above group.max.session.timeout.ms (%s)", c.String("group.max.session.timeout.ms")))
	}
	cfg.GroupInitialRebalanceDelay = c.millis("group.initial.rebalance.delay.ms")
	if cfg.GroupInitialRebalanceDelay == 0 {
		cfg.GroupInitialRebalanceDelay = -1 // node.Config: negative is "no delay"
	}
	cfg.OffsetsRetention = time.Duration(c.Int("offsets.retention.minutes")) * time.Minute
	cfg.OffsetsRetentionCheckInterval = c.millis("offsets.retention.check.interval.ms")
	cfg.OffsetMetadataMaxBytes = int(c.Int("offset.metadata.max.bytes"))
	cfg.QuotaWindow = throttle.Window{Samples: int(c.Int("quota.window.num")), Size: time.Duration(c.Int("quota.window.size.seconds")) * time.Second}
	cfg.ReplicaLag = c.millis("replica.lag.time.max.ms")
	cfg.Rack = c.String("broker.rack")
	cfg.ProducerIDExpiration = c.millis("producer.id.expiration.ms")
	cfg.TransactionalIDExpiration = c.millis("transactional.id.expiration.ms")
	cfg.ProducerExpirationCheck = c.millis("producer.id.expiration.check.interval.ms")
	cfg.FetchSessionSlots = int(c.Int("max.incremental.fetch.session.cache.slots"))
	if cfg.FetchSessionSlots == 0 {
		cfg.FetchSessionSlots = -1 // node.Config: negative is "no sessions"
	}
	cfg.RaftAddr = c.String("brokerd.raft.listener")
	cfg.RaftAdvertise = c.String("brokerd.raft.advertised.listener")
	if cfg.Peers, err = ParsePeers(c.String("brokerd.raft.peers")); err != nil {
		return cfg, badValue(c.settings["brokerd.raft.peers"].Origin, "brokerd.raft.peers", c.String("brokerd.raft.peers"), err)
	}
	if len(cfg.Peers) > 0 && !hasPeer(cfg) {
		s := c.settings["brokerd.raft.peers"]
		return cfg, badValue(s.Origin, s.Key, s.Value, fmt.Errorf("does not list this node (node.id %d)", cfg.NodeID))
	}
	if cfg.RaftDial, err = ParsePeers(c.String("brokerd.raft.dial.overrides")); err != nil {
		s := c.settings["brokerd.raft.dial.overrides"]
		return cfg, badValue(s.Origin, s.Key, s.Value, err)
	}
	cfg.Join = c.String("brokerd.raft.join")
	if cfg.Join != "" && len(cfg.Peers) > 0 {
		s := c.settings["brokerd.raft.join"]
		return cfg, badValue(s.Origin, s.Key, s.Value, fmt.Errorf("give brokerd.raft.join or brokerd.raft.peers, not both"))
	}
	cfg.LogStore = c.String("brokerd.raft.log.store")
	cfg.SnapshotBytes = c.Int("brokerd.raft.snapshot.bytes")
	cfg.WALSegmentBytes = int(c.Int("brokerd.raft.wal.segment.bytes"))
	cfg.MinFreeBytes = c.Int("brokerd.storage.min.free.bytes")
	cfg.SnapshotInterval = c.millis("brokerd.raft.snapshot.interval.ms")
	cfg.TrailingLogs = uint64(c.Int("brokerd.raft.trailing.logs"))
	cfg.TrailingBytes = c.Int("brokerd.raft.trailing.bytes")
	cfg.AdminAddr = c.String("brokerd.admin.listener")
	if err := c.linkTLS(&cfg); err != nil {
		return cfg, err
	}
	cfg.NoPartitionMetrics = !c.Bool("brokerd.metrics.partition.enable")
	cfg.TopicDefaults = c.TopicDefaults()
	if err := c.sasl(&cfg); err != nil {
		return cfg, err
	}
	cfg.Authorizer.Enabled = c.Bool("brokerd.authorizer.enabled")
	cfg.Authorizer.AllowEveryoneIfNoACLFound = c.Bool("allow.everyone.if.no.acl.found")
	for _, u := range strings.Split(c.String("super.users"), ";") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.Authorizer.SuperUsers = append(cfg.Authorizer.SuperUsers, u)
		}
	}
	return cfg, nil
}

func hasPeer(cfg node.Config) bool {
	for _, p := range cfg.Peers {
		if p.ID == cfg.NodeID {
			return true
		}
	}
	return false
}

// LogLevel is brokerd.log.level.
func (c *Config) LogLevel() string { return c.String("brokerd.log.level") }

// LogFormat is brokerd.log.format.
func (c *Config) LogFormat() string { return c.String("brokerd.log.format") }

// ShutdownTimeout is brokerd.shutdown.timeout.ms.
func (c *Config) ShutdownTimeout() time.Duration { return c.millis("brokerd.shutdown.timeout.ms") }

func (c *Config) millis(key string) time.Duration {
	return time.Duration(c.Int(key)) * time.Millisecond
}
