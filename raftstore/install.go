package raftstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// Installing a snapshot replaces all of a node's state with the leader's at
// the snapshot's index. It must survive a crash at any instant, so it runs
// in phases recorded in a marker file that holds the manifest:
//
//	A: every partition directory (and tombstone) moves to a trash directory;
//	B: the staged partition directories move in, each gets a log
//	   checkpoint from the manifest, and one bbolt transaction writes the
//	   manifest's state with its applied index (the commit point);
//	then the trash, the staging directory and the marker go.
//
// At start, a marker means an install was interrupted: it is finished from
// the phase it reached (resumeInstall).

const (
	installMarker = "install.json"
	installTrash  = ".install.trash"
)

type installState struct {
	Index    uint64          `json:"index"`
	Phase    string          `json:"phase"` // "A" or "B"
	Staging  string          `json:"staging"`
	Manifest json.RawMessage `json:"manifest"`
}

func (f *fsm) writeInstallState(st installState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode install marker: %w", err)
	}
	return log.WriteFileAtomic(f.dataDir, installMarker, b)
}

// install swaps in the staged state of manifest m and reloads the FSM from
// it.
func (f *fsm) install(raw []byte, m *manifest, staging string) error {
	f.closeLogs()
	f.tombstones = nil
	if err := f.installFiles(raw, m, staging); err != nil {
		return err
	}
	return f.reload()
}

// installFiles swaps the staged state in, on disk, with the logs closed.
func (f *fsm) installFiles(raw []byte, m *manifest, staging string) error {
	if err := checkStaged(staging, m); err != nil {
		return fmt.Errorf("staged snapshot at index %d: %w", m.AppliedIndex, err)
	}
	st := installState{Index: m.AppliedIndex, Phase: "A", Staging: filepath.Base(staging), Manifest: raw}
	if err := f.writeInstallState(st); err != nil {
		return err
	}
	return f.finishInstall(st, m)
}

// finishInstall runs the phases from st.Phase on.
func (f *fsm) finishInstall(st installState, m *manifest) error {
	trash := filepath.Join(f.dataDir, installTrash)
	staging := filepath.Join(f.dataDir, st.Staging)
	if st.Phase == "A" {
		if err := os.MkdirAll(trash, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", trash, err)
		}
		if err := moveDirs(f.dataDir, trash, func(name string) bool {
			return isPartitionDir(name) || name == deletedDir
		}); err != nil {
			return err
		}
		st.Phase = "B"
		if err := f.writeInstallState(st); err != nil {
			return err
		}
	}
	// Phase B: partition directories in the data directory now come from
	// the staging directory only.
	if err := moveDirs(staging, f.dataDir, isPartitionDir); err != nil {
		return err
	}
	for key, mp := range m.Partitions {
		name, idx, err := parsePartKey(key)
		if err != nil {
			return err
		}
		dir := filepath.Join(f.dataDir, topic.PartitionDir(name, idx))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := log.WriteInstallCheckpoint(dir, mp.StartOffset, mp.Segments); err != nil {
			return fmt.Errorf("checkpoint of %s: %w", key, err)
		}
	}
	if err := log.SyncDir(f.dataDir); err != nil {
		return err
	}
	if err := f.db.Update(func(tx *bolt.Tx) error { return writeManifestState(tx, m) }); err != nil {
		return fmt.Errorf("commit installed state: %w", err)
	}
	for _, p := range []string{trash, staging} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if err := os.Remove(filepath.Join(f.dataDir, installMarker)); err != nil {
		return fmt.Errorf("remove install marker: %w", err)
	}
	return log.SyncDir(f.dataDir)
}

// moveDirs renames the directories in from that keep accepts into to.
func moveDirs(from, to string, keep func(string) bool) error {
	ents, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", from, err)
	}
	for _, e := range ents {
		if !e.IsDir() || !keep(e.Name()) {
			continue
		}
		dst := filepath.Join(to, e.Name())
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("clear %s: %w", dst, err)
		}
		if err := os.Rename(filepath.Join(from, e.Name()), dst); err != nil {
			return fmt.Errorf("move %s: %w", e.Name(), err)
		}
	}
	if err := log.SyncDir(from); err != nil {
		return err
	}
	return log.SyncDir(to)
}

// resumeInstall finishes an install interrupted by a crash. It runs at
// start, before the checkpoint is loaded.
func (f *fsm) resumeInstall() error {
	b, err := os.ReadFile(filepath.Join(f.dataDir, installMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read install marker: %w", err)
	}
	var st installState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("decode install marker: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(st.Manifest, &m); err != nil {
		return fmt.Errorf("decode install marker's manifest: %w", err)
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("install marker's manifest: %w", err)
	}
	f.logger.Warn("finishing a snapshot install interrupted by a crash", "applied_index", st.Index, "phase", st.Phase)
	return f.finishInstall(st, &m)
}

// writeManifestState replaces everything in the state DB with manifest m.
func writeManifestState(tx *bolt.Tx, m *manifest) error {
	for _, name := range [][]byte{bucketMeta, bucketTopics, bucketPartitions, bucketProducers, bucketOffsets, bucketTxns, bucketMembers} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("clear bucket %s: %w", name, err)
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyApplied, u64(m.AppliedIndex)); err != nil {
		return err
	}
	if err := meta.Put(keyNextPID, u64(uint64(m.NextPID))); err != nil {
		return err
	}
	if err := putJSON(meta, keyBrokers, m.Brokers); err != nil {
		return err
	}
	if err := putJSON(meta, keyDefaults, m.Defaults); err != nil {
		return err
	}
	if m.ClusterID != "" {
		if err := meta.Put(keyClusterID, []byte(m.ClusterID)); err != nil {
			return err
		}
	}
	tb, pb := tx.Bucket(bucketTopics), tx.Bucket(bucketPartitions)
	for _, t := range m.Topics {
		if err := putJSON(tb, []byte(t.Name), t); err != nil {
			return err
		}
	}
	for key, mp := range m.Partitions {
		ck := partitionCheckpoint{EndOffset: mp.EndOffset, Epochs: mp.Epochs, Open: mp.Open, Aborted: mp.Aborted}
		if err := putJSON(pb, []byte(key), ck); err != nil {
			return err
		}
	}
	prods := tx.Bucket(bucketProducers)
	for _, p := range m.Producers {
		if err := putJSON(prods, u64(uint64(p.ID)), p); err != nil {
			return err
		}
	}
	ob := tx.Bucket(bucketOffsets)
	for group, g := range m.Groups {
		for _, o := range g {
			if err := putJSON(ob, []byte(offsetKey(group, o.Topic, o.Partition)), o); err != nil {
				return err
			}
		}
	}
	txb := tx.Bucket(bucketTxns)
	for _, t := range m.Txns {
		if err := putJSON(txb, []byte(t.ID), t); err != nil {
			return err
		}
	}
	mb := tx.Bucket(bucketMembers)
	for group, data := range m.GroupMembers {
		if err := mb.Put([]byte(group), data); err != nil {
			return err
		}
	}
	if err := writeManifestScram(tx, m); err != nil {
		return err
	}
	if err := writeManifestACLs(tx, m); err != nil {
		return err
	}
	if err := writeManifestQuotas(tx, m); err != nil {
		return err
	}
	return writeManifestProcessors(tx, m)
}

// reload rebuilds the in-memory FSM from the state DB and the partition
// directories, as at start, into fresh maps that replace the current ones
// under the readers' locks.
func (f *fsm) reload() error {
	nf := &fsm{
		logger: f.logger, dataDir: f.dataDir, db: f.db,
		topics: map[string]*topicState{}, topicIDs: map[[16]byte]string{}, brokers: map[int32]BrokerInfo{}, groups: map[string]groupOffsets{}, scram: map[ScramKey]ScramCredential{},
		defaults: topic.Defaults{}, deleted: map[string]int64{},
		txns: map[string]*TxnState{}, producers: map[int64]*producerState{}, procs: newProcTable(),
	}
	if err := nf.loadCheckpoint(); err != nil {
		return fmt.Errorf("load installed state: %w", err)
	}
	f.mu.Lock()
	f.txnMu.Lock()
	f.topics, f.topicIDs, f.brokers, f.groups, f.defaults = nf.topics, nf.topicIDs, nf.brokers, nf.groups, nf.defaults
	f.members = nf.members
	f.scram, f.scramBoot = nf.scram, nf.scramBoot
	f.clusterID = nf.clusterID
	f.deleted, f.deletedQ = nf.deleted, nil
	f.txns, f.producers, f.nextPID = nf.txns, nf.producers, nf.nextPID
	f.applied = nf.applied
	f.txnMu.Unlock()
	f.mu.Unlock()
	f.acls.set(nf.acls.byKey)
	f.quotas.set(nf.quotas.byEntity)
	f.procs.mu.Lock()
	f.procs.infos, f.procs.delta, f.procs.dirty, f.procs.dropped = nf.procs.infos, nf.procs.delta, nf.procs.dirty, nf.procs.dropped
	f.procs.mu.Unlock()
	f.dirty.reset()
	f.bytesSinceCheckpoint = 0
	f.appliedIndex.Store(f.applied)
	f.wake()
	return nil
}

// installReceived completes, at start, the install of a snapshot that
// raft stored (with its segment files staged and complete) but that the
// FSM never restored: a crash between the two leaves exactly that. It runs
// before the checkpoint is loaded, so no partition is recovered (and
// perhaps truncated in place, which would change a staged file that is a
// hard link to it) before the staged state replaces them all.
func (f *fsm) installReceived() error {
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(f.dataDir, "raft"), 2, io.Discard)
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return err
	}
	applied, err := f.checkpointedIndex()
	if err != nil || list[0].Index <= applied {
		return err
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", list[0].ID, err)
	}
	raw, err := readSnapManifest(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", list[0].ID, err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		f.logger.Error("a stored raft snapshot has an invalid manifest; it is not installed", "snapshot", list[0].ID, "err", err)
		return nil // checkSnapshotGap decides
	}
	staging := stagingDir(f.dataDir, m.AppliedIndex)
	if m.AppliedIndex <= applied || !stagingComplete(staging) {
		return nil // checkSnapshotGap decides
	}
	if err := checkStaged(staging, m); err != nil {
		f.logger.Error("a snapshot received before a crash cannot be installed: its staged files do not match its manifest", "applied_index", m.AppliedIndex, "err", err)
		if err := os.RemoveAll(staging); err != nil {
			return fmt.Errorf("remove %s: %w", staging, err)
		}
		return nil // checkSnapshotGap decides
	}
	f.logger.Warn("installing a snapshot received before a crash", "applied_index", m.AppliedIndex)
	return f.installFiles(raw, m, staging)
}

// checkpointedIndex reads the applied index of the last checkpoint.
func (f *fsm) checkpointedIndex() (uint64, error) {
	var applied uint64
	err := f.db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keyApplied); len(v) == 8 {
				applied = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read checkpointed index: %w", err)
	}
	return applied, nil
}
