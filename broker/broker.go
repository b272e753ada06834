package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/broker/group"
	"github.com/brokerd/brokerd/broker/throttle"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// Config is the broker-level behaviour that Kafka configures in
// server.properties.
type Config struct {
	NodeID    int32
	ClusterID string
	// DataDir is reported by DescribeLogDirs.
	DataDir string
	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool
	// NumPartitions is num.partitions, for auto-created topics and
	// CreateTopics with -1.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor int16

	// GroupMinSessionTimeout and GroupMaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (default 6s and 30m): the session timeouts a group member may ask
	// for.
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty group waits for more members.
	// Zero means Kafka's default, 3s; negative means no delay.
	GroupInitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes (default 7 days): the
	// committed offsets of a group that has been empty this long, and
	// that were committed longer ago than this, are deleted.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms
	// (default 10m).
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (default 4096):
	// longer commit metadata is refused with OFFSET_METADATA_TOO_LARGE.
	OffsetMetadataMaxBytes int
	// ReplicaLag is replica.lag.time.max.ms: a member the leader has not
	// heard from for longer leaves the ISR in Metadata.
	ReplicaLag time.Duration
	// FetchSessions sizes the incremental fetch session cache
	// (max.incremental.fetch.session.cache.slots); zero values take
	// Kafka's defaults.
	FetchSessions fetchsession.Config
	// Authorizer turns ACL authorization on (authz.go).
	Authorizer AuthorizerConfig
	// QuotaWindow is quota.window.num and quota.window.size.seconds: the
	// client quotas' rate window (zero values take Kafka's 11 x 1 s).
	QuotaWindow throttle.Window

	Logger *slog.Logger
}

// Broker answers Kafka requests from committed state and proposes changes
// through raftstore.
type Broker struct {
	cfg    Config
	store  *raftstore.Store
	logger *slog.Logger

	// groups is the group coordinator, active while this node leads raft
	// (runCoordinator).
	groups   *group.Coordinator
	sessions *fetchsession.Cache
	// policy is the authorizer's local configuration (super users, the
	// default when no ACL is found).
	policy    *acl.Policy
	stop      chan struct{}
	closeOnce sync.Once
	coordDone chan struct{}
	// records writes the coordinator's group membership records.
	records *groupRecords
	// quotas measures clients against the client quotas (quota_enforce.go).
	quotas *throttle.Manager
}

// New returns a Broker over store.
func New(cfg Config, store *raftstore.Store) *Broker {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = defaultOffsetsRetention
	}
	if cfg.OffsetsRetentionCheckInterval <= 0 {
		cfg.OffsetsRetentionCheckInterval = defaultOffsetsRetentionCheckInterval
	}
	if cfg.ReplicaLag <= 0 {
		cfg.ReplicaLag = raftstore.DefaultReplicaLag
	}
	if cfg.OffsetMetadataMaxBytes <= 0 {
		cfg.OffsetMetadataMaxBytes = defaultOffsetMetadataMaxBytes
	}
	records := newGroupRecords(store, cfg.Logger.With("component", "group-coordinator"))
	b := &Broker{
		cfg:       cfg,
		store:     store,
		logger:    cfg.Logger.With("component", "broker"),
		groups:    newCoordinator(cfg, cfg.Logger, records.persist),
		records:   records,
		sessions:  fetchsession.New(cfg.FetchSessions),
		policy:    newPolicy(cfg.Authorizer),
		stop:      make(chan struct{}),
		coordDone: make(chan struct{}),
	}
	b.quotas = newQuotaManager(cfg, store.Quotas)
	go b.quotas.Run(b.stop, time.Minute)
	go b.runCoordinator()
	return b
}

// FetchSessionStats reports the fetch-session cache for metrics.
func (b *Broker) FetchSessionStats() (sessions, partitions int, evictions int64) {
	s := b.sessions.Stats()
	return s.Sessions, s.Partitions, s.Evictions
}

// Handle is the wire.Handler: it runs one request and returns its response
// (nil for acks=0 produce).
func (b *Broker) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	start := time.Now()
	resp, err := b.authorizeThenHandle(req, func(a *authCtx) (kmsg.Response, error) { return b.dispatch(ctx, req, a) })
	if err != nil {
		return resp, err
	}
	if resp != nil {
		resp.SetVersion(req.Msg.GetVersion())
	}
	b.enforceQuotas(req, resp, start)
	return resp, nil
}

// dispatch runs a request's handler. a is the request's authorizer (nil
// when authorization is off), for the handlers that decide as they act:
// Fetch (its session's partitions) and Metadata (auto-creation).
func (b *Broker) dispatch(ctx context.Context, req *wire.Request, a *authCtx) (kmsg.Response, error) {
	switch r := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		return b.apiVersions(r), nil
	case *kmsg.MetadataRequest:
		return b.metadata(ctx, req.Listener, r, a), nil
	case *kmsg.ProduceRequest:
		return b.produce(ctx, req, r)
	case *kmsg.FetchRequest:
		// A long poll must not hold up a later produce on the connection.
		req.ReleaseOrder()
		return b.fetch(ctx, req, r, a), nil
	case *kmsg.ListOffsetsRequest:
		return b.listOffsets(r), nil
	case *kmsg.CreateTopicsRequest:
		return b.createTopics(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return b.deleteTopics(ctx, r), nil
	case *kmsg.CreatePartitionsRequest:
		return b.createPartitions(ctx, r), nil
	case *kmsg.DescribeConfigsRequest:
		return b.describeConfigs(r), nil
	case *kmsg.AlterConfigsRequest:
		return b.alterConfigs(ctx, r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.incrementalAlterConfigs(ctx, r), nil
	case *kmsg.DeleteRecordsRequest:
		return b.deleteRecords(ctx, r), nil
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.offsetForLeaderEpoch(r), nil
	case *kmsg.DescribeClusterRequest:
		return b.describeCluster(req.Listener, r), nil
	case *kmsg.DescribeLogDirsRequest:
		return b.describeLogDirs(r), nil
	case *kmsg.InitProducerIDRequest:
		return b.initProducerID(ctx, r), nil
	case *kmsg.FindCoordinatorRequest:
		return b.findCoordinator(req.Listener, r), nil
	case *kmsg.JoinGroupRequest:
		// JoinGroup waits for the rebalance; SyncGroup for the leader.
		req.ReleaseOrder()
		return b.joinGroup(ctx, req, r)
	case *kmsg.SyncGroupRequest:
		req.ReleaseOrder()
		return b.syncGroup(ctx, r)
	case *kmsg.HeartbeatRequest:
		req.ReleaseOrder()
		return b.heartbeat(r), nil
	case *kmsg.LeaveGroupRequest:
		return b.leaveGroup(r), nil
	case *kmsg.OffsetCommitRequest:
		return b.offsetCommit(ctx, req, r), nil
	case *kmsg.OffsetFetchRequest:
		return b.offsetFetch(r), nil
	case *kmsg.DescribeGroupsRequest:
		return b.describeGroups(r), nil
	case *kmsg.ListGroupsRequest:
		return b.listGroups(r), nil
	case *kmsg.DeleteGroupsRequest:
		return b.deleteGroups(ctx, r), nil
	case *kmsg.OffsetDeleteRequest:
		return b.offsetDelete(ctx, r), nil
	case *kmsg.AddPartitionsToTxnRequest:
		return b.addPartitionsToTxn(ctx, r), nil
	case *kmsg.AddOffsetsToTxnRequest:
		return b.addOffsetsToTxn(ctx, r), nil
	case *kmsg.TxnOffsetCommitRequest:
		return b.txnOffsetCommit(ctx, r), nil
	case *kmsg.EndTxnRequest:
		return b.endTxn(ctx, r), nil
	case *kmsg.DescribeTransactionsRequest:
		return b.describeTransactions(r), nil
	case *kmsg.ListTransactionsRequest:
		return b.listTransactions(r), nil
	case *kmsg.DescribeProducersRequest:
		return b.describeProducers(r), nil
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return b.describeUserScram(r), nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return b.alterUserScram(ctx, r), nil
	case *kmsg.CreateACLsRequest:
		return b.createACLs(ctx, r), nil
	case *kmsg.DescribeACLsRequest:
		return b.describeACLs(r), nil
	case *kmsg.DeleteACLsRequest:
		return b.deleteACLs(ctx, r), nil
	case *kmsg.DescribeClientQuotasRequest:
		return b.describeClientQuotas(r), nil
	case *kmsg.AlterClientQuotasRequest:
		return b.alterClientQuotas(ctx, r), nil
	}
	// The wire layer only passes advertised keys; reaching here is a bug in
	// the version table, and the connection is closed.
	return nil, fmt.Errorf("no handler for api key %d", req.Header.APIKey)
}
