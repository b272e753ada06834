package raftstore

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore/acl"
	"github.com/brokerd/brokerd/raftstore/quota"
	"github.com/brokerd/brokerd/topic"
)

// manifest is a raft snapshot: a small description of the state at an
// applied index. It references sealed segments instead of copying them, so a
// snapshot costs a checkpoint, not a copy of the partition logs.
type manifest struct {
	AppliedIndex uint64                       `json:"applied_index"`
	NextPID      int64                        `json:"next_producer_id"`
	Brokers      map[int32]BrokerInfo         `json:"brokers"`
	Topics       []topic.Topic                `json:"topics"`
	Partitions   map[string]manifestPartition `json:"partitions"`
	Producers    []*producerState             `json:"producers"`
	Groups       map[string]groupOffsets      `json:"groups,omitempty"`
	GroupMembers map[string][]byte            `json:"group_members,omitempty"`
	Txns         []*TxnState                  `json:"transactions,omitempty"`
	Defaults     topic.Defaults               `json:"topic_defaults,omitempty"`
	ClusterID    string                       `json:"cluster_id,omitempty"`
	// Processors and their whole state (proc_checkpoint.go).
	Processors     []*ProcessorInfo        `json:"processors,omitempty"`
	ProcessorState map[string][]StateEntry `json:"processor_state,omitempty"`
	// Scram holds the SCRAM credentials (scram.go).
	Scram []ScramCredential `json:"scram,omitempty"`
	// ScramBootstrapped are the bootstrap credentials already handled
	// (scram_bootstrap.go).
	ScramBootstrapped []ScramKey `json:"scram_bootstrapped,omitempty"`
	// ACLs are the access control bindings (acls_checkpoint.go).
	ACLs []acl.Binding `json:"acls,omitempty"`
	// Quotas are the client quotas (quotas_checkpoint.go).
	Quotas []quota.Entry `json:"client_quotas,omitempty"`
}

type manifestPartition struct {
	StartOffset int64             `json:"start_offset"`
	EndOffset   int64             `json:"end_offset"`
	Epochs      []EpochStart      `json:"epochs,omitempty"`
	Open        map[int64]int64   `json:"open,omitempty"`
	Aborted     []AbortedTxn      `json:"aborted,omitempty"`
	Segments    []log.SegmentInfo `json:"segments"`
}

// Snapshot implements raft.FSM. It runs on the FSM goroutine, so the state
// it describes is exactly the state at f.applied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if f.stopped {
		return nil, fmt.Errorf("snapshot: %w", errStopped)
	}
	if err := f.checkpoint(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", f.fail(fmt.Errorf("checkpoint: %w", err)))
	}
	m := manifest{AppliedIndex: f.applied, NextPID: f.nextPID, Partitions: map[string]manifestPartition{}}
	f.mu.RLock()
	m.Brokers = make(map[int32]BrokerInfo, len(f.brokers))
	for id, b := range f.brokers {
		m.Brokers[id] = b
	}
	m.Defaults = maps.Clone(f.defaults)
	m.ClusterID = f.clusterID
	m.Scram = f.manifestScram()
	m.ScramBootstrapped = f.manifestScramBoot()
	m.Groups = make(map[string]groupOffsets, len(f.groups))
	for name, g := range f.groups {
		m.Groups[name] = maps.Clone(g)
	}
	m.GroupMembers = maps.Clone(f.members) // values are never changed in place
	for _, ts := range f.topics {
		m.Topics = append(m.Topics, ts.meta)
		for _, p := range ts.parts {
			m.Partitions[p.key()] = manifestPartition{
				StartOffset: p.log.StartOffset(),
				EndOffset:   p.log.EndOffset(),
				Epochs:      append([]EpochStart(nil), p.epochs...),
				Open:        maps.Clone(p.open),
				Aborted:     append([]AbortedTxn(nil), p.aborted...),
				Segments:    p.log.Segments(),
			}
		}
	}
	f.mu.RUnlock()
	for _, p := range f.producers {
		cp := *p
		m.Producers = append(m.Producers, &cp)
	}
	for _, t := range f.txns {
		m.Txns = append(m.Txns, t.clone())
	}
	f.manifestACLs(&m)
	f.manifestQuotas(&m)
	if err := f.manifestProcessors(&m); err != nil {
		return nil, fmt.Errorf("snapshot: processors: %w", err)
	}
	buf, err := json.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("snapshot: encode manifest: %w", err)
	}
	return manifestSnapshot(buf), nil
}

// Restore implements raft.FSM. brokerd sets NoSnapshotRestoreOnStart: a
// node recovers from its own checkpoint, so Restore runs only when a leader
// installs a snapshot on a follower that fell behind its log. The
// snapshot's segment files arrived with it, in a staging directory
// (snapshotSink); install swaps them in.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	raw, err := readSnapManifest(rc)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if m.AppliedIndex <= f.applied {
		// Our checkpoint already covers it.
		return nil
	}
	// The install replaces the logs and the state DB a checkpoint in
	// flight is writing.
	if err := f.awaitCheckpoint(); err != nil {
		return fmt.Errorf("restore: %w", f.fail(fmt.Errorf("checkpoint: %w", err)))
	}
	staging := stagingDir(f.dataDir, m.AppliedIndex)
	if !stagingComplete(staging) {
		return fmt.Errorf("restore: snapshot at index %d: %w", m.AppliedIndex, errNoStaging)
	}
	// Checked here too so that a bad staging directory fails this install
	// (raft sends the snapshot again) instead of stopping the node.
	if err := checkStaged(staging, m); err != nil {
		return fmt.Errorf("restore: snapshot at index %d: %w", m.AppliedIndex, err)
	}
	if err := f.install(raw, m, staging); err != nil {
		// A half-done install resumes at the next start (installMarker);
		// this node must not go on with what it holds now.
		return f.fail(fmt.Errorf("install snapshot at index %d: %w", m.AppliedIndex, err))
	}
	f.installs.Add(1)
	f.logger.Info("installed a snapshot from the leader", "applied_index", m.AppliedIndex, "topics", len(m.Topics))
	return nil
}

type manifestSnapshot []byte

func (s manifestSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(append(snapHead(0, s), snapEnd...)); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s manifestSnapshot) Release() {}
