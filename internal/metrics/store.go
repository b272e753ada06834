package metrics

import (
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// Store is what the collectors read at scrape time; *raftstore.Store has
// it.
type Store interface {
	Stats() map[string]string
	AppliedIndex() uint64
	Leader() (int32, bool)
	Topics() []topic.Topic
	Log(name string, partition int32) (*log.Log, bool)
	OffsetGroups() []string
	GroupOffsets(group string) []raftstore.OffsetCommit
	CheckpointStats() raftstore.CheckpointStats
	StorageStore
}

// RegisterStore adds the collectors that read s: raft state and indexes,
// and consumer-group lag; with perPartition, also each partition's log
// size and offsets and each group's per-partition lag and offset.
func (m *Metrics) RegisterStore(s Store, perPartition bool) {
	m.reg.MustRegister(newRaftCollector(s), newGroupCollector(s, perPartition), newStorageCollector(s), newOpenCacheCollector())
	if perPartition {
		m.reg.MustRegister(newPartitionCollector(s))
	}
}
