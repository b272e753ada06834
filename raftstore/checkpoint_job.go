package raftstore

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/log"
)

// A checkpoint runs in two parts, so that apply is not held up while the
// disk works:
//
//  1. capture, on the FSM goroutine: what changed since the last
//     checkpoint is encoded into a ckptJob (bbolt writes, logs to sync,
//     directories to sync), as of f.applied, and the dirty sets restart;
//  2. commit, on a goroutine of its own while apply goes on: every log is
//     synced up to at least what the job covers, then the directories, and
//     only then one bbolt transaction records the state with its applied
//     index. A crash before that commit leaves the previous checkpoint,
//     and raft replays the entries after it.
//
// One checkpoint is in flight at a time. What reads the state DB directly
// reads state the FSM also keeps in memory until the commit lands (the
// processors' delta), so readers never see a gap. Whatever closes or
// replaces partition logs or the state DB (deleting a topic, installing a
// snapshot, taking one, closing the store) first waits for the checkpoint
// in flight.

// testBeforeCommit, when set by a test, runs before each checkpoint's
// commit starts.
var testBeforeCommit func()

// ckptJob is one captured checkpoint.
type ckptJob struct {
	applied uint64
	ops     []ckptOp
	// logs are synced before the commit; syncDirs are fsynced after them.
	logs     []*log.Log
	syncDirs []string
	// procs is what the processors' memory layer forgets once the commit
	// has landed (procCapture).
	procs procCapture
	// tombstones the commit covers; removed after it.
	tombstones []tombstone
}

type ckptOpKind uint8

const (
	opPut ckptOpKind = iota
	opDelete
	opDeletePrefix
	opDropBucket // key names a bucket inside bucket, dropped if present
)

// ckptOp is one write in the checkpoint's bbolt transaction. bucket is a
// top-level bucket, or the processor state root with sub naming the
// processor's bucket inside it.
type ckptOp struct {
	kind     ckptOpKind
	bucket   []byte
	sub      []byte
	key, val []byte
}

func (j *ckptJob) put(bucket, key, val []byte) {
	j.ops = append(j.ops, ckptOp{kind: opPut, bucket: bucket, key: key, val: val})
}

func (j *ckptJob) putJSON(bucket, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	j.put(bucket, key, buf)
	return nil
}

func (j *ckptJob) delete(bucket, key []byte) {
	j.ops = append(j.ops, ckptOp{kind: opDelete, bucket: bucket, key: key})
}

func (j *ckptJob) deletePrefix(bucket, prefix []byte) {
	j.ops = append(j.ops, ckptOp{kind: opDeletePrefix, bucket: bucket, key: prefix})
}

// write applies the job's operations in tx, in order.
func (j *ckptJob) write(tx *bolt.Tx) error {
	for _, op := range j.ops {
		b, err := tx.CreateBucketIfNotExists(op.bucket)
		if err != nil {
			return fmt.Errorf("bucket %s: %w", op.bucket, err)
		}
		if op.sub != nil {
			if b, err = b.CreateBucketIfNotExists(op.sub); err != nil {
				return fmt.Errorf("bucket %s/%s: %w", op.bucket, op.sub, err)
			}
		}
		switch op.kind {
		case opPut:
			err = b.Put(op.key, op.val)
		case opDelete:
			err = b.Delete(op.key)
		case opDeletePrefix:
			err = deletePrefix(b, op.key)
		case opDropBucket:
			if b.Bucket(op.key) != nil {
				err = b.DeleteBucket(op.key)
			}
		}
		if err != nil {
			return fmt.Errorf("write %s in %s: %w", op.key, op.bucket, err)
		}
	}
	return nil
}

// captureCheckpoint encodes what changed since the last checkpoint into a
// job and restarts the dirty sets. FSM goroutine only.
func (f *fsm) captureCheckpoint() (*ckptJob, error) {
	job := &ckptJob{applied: f.applied}
	for _, p := range f.dirty.parts {
		job.logs = append(job.logs, p.log)
	}
	if f.dataDirDirty {
		job.syncDirs = append(f.tombstoneDirs(), f.dataDir)
	}
	job.put(bucketMeta, keyApplied, u64(f.applied))
	job.put(bucketMeta, keyNextPID, u64(uint64(f.nextPID)))
	f.mu.RLock()
	brokers, err := json.Marshal(f.brokers)
	f.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("encode brokers: %w", err)
	}
	job.put(bucketMeta, keyBrokers, brokers)
	if err := job.putJSON(bucketMeta, keyDefaults, f.defaults); err != nil {
		return nil, err
	}
	if f.clusterID != "" {
		job.put(bucketMeta, keyClusterID, []byte(f.clusterID))
	}
	if err := f.checkpointTopics(job); err != nil {
		return nil, err
	}
	for key, p := range f.dirty.parts {
		if err := job.putJSON(bucketPartitions, []byte(key), p.checkpoint()); err != nil {
			return nil, err
		}
	}
	if err := f.checkpointOffsets(job); err != nil {
		return nil, err
	}
	if err := f.checkpointGroupMembers(job); err != nil {
		return nil, err
	}
	if err := f.checkpointProcessors(job); err != nil {
		return nil, err
	}
	if err := f.checkpointScram(job); err != nil {
		return nil, err
	}
	if err := f.checkpointACLs(job); err != nil {
		return nil, err
	}
	if err := f.checkpointQuotas(job); err != nil {
		return nil, err
	}
	for id := range f.dirty.txns {
		if t := f.txns[id]; t != nil {
			if err := job.putJSON(bucketTxns, []byte(id), t); err != nil {
				return nil, err
			}
		} else {
			job.delete(bucketTxns, []byte(id))
		}
	}
	for id := range f.dirty.producers {
		if p := f.producers[id]; p != nil {
			if err := job.putJSON(bucketProducers, u64(uint64(id)), p); err != nil {
				return nil, err
			}
		} else {
			job.delete(bucketProducers, u64(uint64(id)))
		}
	}
	job.tombstones = f.takeTombstones(f.applied)
	f.dataDirDirty = false
	f.dirty.reset()
	f.bytesSinceCheckpoint = 0
	f.checkpointDue.Store(false)
	return job, nil
}

// commitCheckpoint makes a captured job durable: the logs, then the
// directories, then the bbolt commit; then the memory the commit made
// redundant is forgotten and the covered tombstones removed. It runs on
// the FSM goroutine (checkpoint) or on the checkpoint's own.
func (f *fsm) commitCheckpoint(job *ckptJob) error {
	if testBeforeCommit != nil {
		testBeforeCommit()
	}
	for _, l := range job.logs {
		if err := l.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", l.Dir(), err)
		}
	}
	for _, d := range job.syncDirs {
		if err := log.SyncDir(d); err != nil {
			return err
		}
	}
	if err := f.db.Update(job.write); err != nil {
		return fmt.Errorf("commit checkpoint at index %d: %w", job.applied, err)
	}
	f.procs.checkpointed(&job.procs)
	removeTombstones(f.logger, job.tombstones)
	return nil
}

// startCheckpoint captures a checkpoint and commits it in the background.
// With one still in flight it waits for it only once twice the checkpoint
// interval has piled up; before that the next batch tries again.
func (f *fsm) startCheckpoint() error {
	if f.ckptBusy {
		if f.bytesSinceCheckpoint < 2*checkpointBytes {
			return nil
		}
		if err := f.awaitCheckpoint(); err != nil {
			return err
		}
	}
	start := time.Now()
	job, err := f.captureCheckpoint()
	f.ckptStall.observe(time.Since(start))
	if err != nil {
		return err
	}
	f.ckptBusy = true
	go func() {
		// A full disk holds the checkpoint back, not the node: the same
		// job is committed once there is space (a bbolt commit that
		// failed left nothing behind), and apply goes on meanwhile until
		// two checkpoints' worth have piled up.
		err := f.whileNoSpace("checkpoint", func() error { return f.commitCheckpoint(job) })
		if err == nil {
			f.ckptTimer.observe(time.Since(start))
		} else {
			// Store.Failed reports it at once; apply stops at its next
			// batch (pollCheckpoint), Close at once.
			f.markFailed(fmt.Errorf("checkpoint at raft index %d: %w", job.applied, err))
		}
		f.ckptDone <- err
	}()
	return nil
}

// awaitCheckpoint waits for the checkpoint in flight, if any, and returns
// its error. FSM goroutine (or after it has stopped) only.
func (f *fsm) awaitCheckpoint() error {
	if !f.ckptBusy {
		return nil
	}
	start := time.Now()
	err := <-f.ckptDone
	f.ckptStall.observe(time.Since(start))
	f.ckptBusy = false
	return err
}

// pollCheckpoint collects a finished checkpoint without waiting.
func (f *fsm) pollCheckpoint() error {
	if !f.ckptBusy {
		return nil
	}
	select {
	case err := <-f.ckptDone:
		f.ckptBusy = false
		return err
	default:
		return nil
	}
}
