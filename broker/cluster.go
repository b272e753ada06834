package broker

import (
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) describeCluster(listener string, r *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.EndpointType = r.EndpointType
	if r.Version >= 1 && r.EndpointType != 1 {
		// Only broker endpoints exist: raft runs inside every broker.
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp
	}
	resp.ClusterID = b.clusterID()
	resp.ControllerID = -1
	if id, ok := b.store.Leader(); ok {
		resp.ControllerID = id
	}
	for _, br := range b.brokersOn(listener) {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port = br.NodeID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			db.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp
}

// describeLogDirs reports the one data directory and the partitions in it.
func (b *Broker) describeLogDirs(r *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	var st syscall.Statfs_t
	if err := syscall.Statfs(b.cfg.DataDir, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * st.Bsize
		dir.UsableBytes = int64(st.Bavail) * st.Bsize
	} else {
		dir.TotalBytes, dir.UsableBytes = -1, -1
	}
	want := map[string][]int32{}
	all := r.Topics == nil
	for _, t := range r.Topics {
		want[t.Topic] = t.Partitions
	}
	for _, t := range b.store.Topics() {
		parts, ok := want[t.Name]
		if !all && !ok {
			continue
		}
		if all {
			for i := int32(0); i < t.Partitions; i++ {
				parts = append(parts, i)
			}
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.Name
		for _, p := range parts {
			l, ok := b.store.Log(t.Name, p)
			if !ok {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p, l.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		dir.Topics = append(dir.Topics, dt)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

// clusterID is the cluster's id, as the first leader set it in the
// replicated state; this node's own until then.
func (b *Broker) clusterID() string {
	if id := b.store.ClusterID(); id != "" {
		return id
	}
	return b.cfg.ClusterID
}
