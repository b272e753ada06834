package raftstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/topic"
)

// The state DB's buckets.
var (
	bucketMeta       = []byte("meta")
	bucketTopics     = []byte("topics")
	bucketPartitions = []byte("partitions")
	bucketProducers  = []byte("producers")
	bucketOffsets    = []byte("group_offsets")
	bucketTxns       = []byte("transactions")
	bucketMembers    = []byte("group_members")

	keyApplied   = []byte("applied_index")
	keyNextPID   = []byte("next_producer_id")
	keyBrokers   = []byte("brokers")
	keyDefaults  = []byte("topic_defaults")
	keyClusterID = []byte("cluster_id")
)

func partKey(name string, idx int32) string {
	return name + "/" + strconv.Itoa(int(idx))
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// checkpoint makes the FSM's state durable up to f.applied, on the calling
// (FSM) goroutine: it waits for a checkpoint in flight, then captures and
// commits another. Snapshots and Close use it; apply starts checkpoints
// in the background instead (startCheckpoint).
func (f *fsm) checkpoint() error {
	if err := f.awaitCheckpoint(); err != nil {
		return err
	}
	start := time.Now()
	job, err := f.captureCheckpoint()
	if err != nil {
		return err
	}
	if err := f.commitCheckpoint(job); err != nil {
		return err
	}
	// Apply (or whatever called, a snapshot) waited for all of it.
	f.ckptTimer.observe(time.Since(start))
	f.ckptStall.observe(time.Since(start))
	return nil
}

// checkpointTopics captures every dirty topic and its partitions: the
// topic's partition entries are rewritten whole.
func (f *fsm) checkpointTopics(job *ckptJob) error {
	for name := range f.dirty.topics {
		job.deletePrefix(bucketPartitions, []byte(name+"/"))
		f.mu.RLock()
		ts := f.topics[name]
		f.mu.RUnlock()
		if ts == nil {
			job.delete(bucketTopics, []byte(name))
			continue
		}
		f.mu.RLock()
		meta := ts.meta
		parts := ts.parts
		f.mu.RUnlock()
		if err := job.putJSON(bucketTopics, []byte(name), meta); err != nil {
			return err
		}
		for _, p := range parts {
			if err := job.putJSON(bucketPartitions, []byte(p.key()), p.checkpoint()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *partition) checkpoint() partitionCheckpoint {
	return partitionCheckpoint{EndOffset: p.log.EndOffset(), Epochs: p.epochs, Open: p.open, Aborted: p.aborted}
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	return b.Put(k, buf)
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	var keys [][]byte
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// loadCheckpoint reads the state DB into a fresh FSM and brings every
// partition log back to exactly the end offset the checkpoint covers.
func (f *fsm) loadCheckpoint() error {
	return f.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketTopics, bucketPartitions, bucketProducers, bucketOffsets, bucketTxns, bucketMembers} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyApplied); len(v) == 8 {
			f.applied = binary.BigEndian.Uint64(v)
		}
		// Deletions the checkpoint does not cover are undone before the
		// partitions are opened; raft replays them.
		if err := restoreTombstones(f.dataDir, f.applied); err != nil {
			return err
		}
		if v := meta.Get(keyNextPID); len(v) == 8 {
			f.nextPID = int64(binary.BigEndian.Uint64(v))
		}
		if v := meta.Get(keyBrokers); v != nil {
			if err := json.Unmarshal(v, &f.brokers); err != nil {
				return fmt.Errorf("decode brokers: %w", err)
			}
		}
		f.clusterID = string(meta.Get(keyClusterID))
		if v := meta.Get(keyDefaults); v != nil {
			if err := json.Unmarshal(v, &f.defaults); err != nil {
				return fmt.Errorf("decode topic defaults: %w", err)
			}
		}
		err := tx.Bucket(bucketProducers).ForEach(func(k, v []byte) error {
			var p producerState
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decode producer %x: %w", k, err)
			}
			f.producers[p.ID] = &p
			return nil
		})
		if err != nil {
			return err
		}
		if err := f.loadOffsets(tx); err != nil {
			return err
		}
		if err := f.loadGroupMembers(tx); err != nil {
			return err
		}
		if err := f.loadScram(tx); err != nil {
			return err
		}
		if err := f.loadProcessors(tx); err != nil {
			return err
		}
		if err := f.loadACLs(tx); err != nil {
			return err
		}
		if err := f.loadQuotas(tx); err != nil {
			return err
		}
		err = tx.Bucket(bucketTxns).ForEach(func(k, v []byte) error {
			var t TxnState
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode transaction %s: %w", k, err)
			}
			f.txns[t.ID] = &t
			return nil
		})
		if err != nil {
			return err
		}
		pb := tx.Bucket(bucketPartitions)
		return tx.Bucket(bucketTopics).ForEach(func(k, v []byte) error {
			var t topic.Topic
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("decode topic %s: %w", k, err)
			}
			ts := &topicState{meta: t}
			f.topics[t.Name] = ts
			f.topicIDs[t.ID] = t.Name
			for i := int32(0); i < t.Partitions; i++ {
				p, err := f.recoverPartition(t, i, pb.Get([]byte(partKey(t.Name, i))))
				if err != nil {
					return err
				}
				ts.parts = append(ts.parts, p)
			}
			return nil
		})
	})
}

func (f *fsm) recoverPartition(t topic.Topic, idx int32, raw []byte) (*partition, error) {
	var ck partitionCheckpoint
	if raw != nil {
		if err := json.Unmarshal(raw, &ck); err != nil {
			return nil, fmt.Errorf("decode checkpoint of %s-%d: %w", t.Name, idx, err)
		}
	}
	p, err := f.openPartition(t.Name, idx, t.Configs)
	if err != nil {
		return nil, err
	}
	p.epochs = ck.Epochs
	p.open = ck.Open
	p.aborted = ck.Aborted
	switch end := p.log.EndOffset(); {
	case end > ck.EndOffset:
		// Appended after the checkpoint: raft replays those entries.
		if err := p.log.Truncate(ck.EndOffset); err != nil {
			return nil, fmt.Errorf("truncate %s-%d to checkpoint %d: %w", t.Name, idx, ck.EndOffset, err)
		}
	case end < ck.EndOffset:
		return nil, fmt.Errorf("partition %s-%d: its segments end at offset %d, but the state checkpoint (raft index %d) counts offsets up to %d as durable: "+
			"records the checkpoint covers are missing from %s (segment files removed or truncated outside brokerd, a disk or filesystem that lost synced writes, or a brokerd bug). "+
			"Restore that directory from a backup, or, in a cluster, move this node's data directory aside and restart it to rebuild from its peers",
			t.Name, idx, end, f.applied, ck.EndOffset, filepath.Join(f.dataDir, topic.PartitionDir(t.Name, idx)))
	}
	return p, nil
}

// isPartitionDir reports whether a data-dir entry is named like a partition
// directory, "<topic>-<partition>".
func isPartitionDir(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return false
	}
	if _, err := strconv.ParseUint(name[i+1:], 10, 31); err != nil {
		return false
	}
	return topic.ValidateName(name[:i]) == nil
}

// checkpointOffsets captures the dirty group offsets.
func (f *fsm) checkpointOffsets(job *ckptJob) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for k := range f.dirty.offsets {
		group, rest := splitOffsetKey(k)
		topicName, part, _ := strings.Cut(rest, "\x00")
		idx, _ := strconv.Atoi(part)
		o, ok := f.groups[group][partKey(topicName, int32(idx))]
		if !ok {
			job.delete(bucketOffsets, []byte(k))
			continue
		}
		if err := job.putJSON(bucketOffsets, []byte(k), o); err != nil {
			return err
		}
	}
	return nil
}

func (f *fsm) loadOffsets(tx *bolt.Tx) error {
	return tx.Bucket(bucketOffsets).ForEach(func(k, v []byte) error {
		var o OffsetCommit
		if err := json.Unmarshal(v, &o); err != nil {
			return fmt.Errorf("decode offset %q: %w", k, err)
		}
		group, _ := splitOffsetKey(string(k))
		g := f.groups[group]
		if g == nil {
			g = groupOffsets{}
			f.groups[group] = g
		}
		g[partKey(o.Topic, o.Partition)] = o
		return nil
	})
}
