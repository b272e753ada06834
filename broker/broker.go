package broker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore"
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
	Logger                   *slog.Logger
}

// Broker answers Kafka requests from committed state and proposes changes
// through raftstore.
type Broker struct {
	cfg    Config
	store  *raftstore.Store
	logger *slog.Logger
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
	return &Broker{cfg: cfg, store: store, logger: cfg.Logger.With("component", "broker")}
}

// Handle is the wire.Handler: it runs one request and returns its response
// (nil for acks=0 produce).
func (b *Broker) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	resp, err := b.dispatch(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	resp.SetVersion(req.Msg.GetVersion())
	return resp, nil
}

func (b *Broker) dispatch(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	switch r := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		return b.apiVersions(r), nil
	case *kmsg.MetadataRequest:
		return b.metadata(ctx, r), nil
	case *kmsg.ProduceRequest:
		return b.produce(ctx, req, r), nil
	case *kmsg.FetchRequest:
		// A long poll must not hold up a later produce on the connection.
		req.ReleaseOrder()
		return b.fetch(ctx, r), nil
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
		return b.describeCluster(r), nil
	case *kmsg.DescribeLogDirsRequest:
		return b.describeLogDirs(r), nil
	case *kmsg.InitProducerIDRequest:
		return b.initProducerID(ctx, r), nil
	}
	// The wire layer only passes advertised keys; reaching here is a bug in
	// the version table, and the connection is closed.
	return nil, fmt.Errorf("no handler for api key %d", req.Header.APIKey)
}
