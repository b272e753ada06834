package raftstore

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/raftstore/quota"
	"github.com/brokerd/brokerd/topic"
)

// fsm is brokerd's raft state machine. Apply runs on raft's single FSM
// goroutine; readers take mu.RLock to look topics up.
type fsm struct {
	logger  *slog.Logger
	dataDir string
	db      *bolt.DB
	// space is the data directory's free-space guard, and stop closes
	// when the store does: writes that meet a full disk wait on both
	// (whileNoSpace). Both are nil in tests that build an fsm alone.
	space *spaceGuard
	stop  <-chan struct{}

	mu     sync.RWMutex
	topics map[string]*topicState
	// topicIDs maps each topic's ID to its name (the index of topics
	// by ID), under mu like topics.
	topicIDs map[[16]byte]string
	brokers  map[int32]BrokerInfo
	groups   map[string]groupOffsets
	// members holds each group's membership record (groupmembers.go).
	members map[string][]byte
	// scram holds the SCRAM credentials (scram.go).
	scram map[ScramKey]ScramCredential
	// scramBoot marks the bootstrap credentials already handled once
	// (scram_bootstrap.go); nil until the first.
	scramBoot map[ScramKey]bool
	// defaults are the cluster's broker-level topic config defaults:
	// replicated (setTopicDefaultsCmd), so every replica resolves segment
	// and retention settings alike, whatever its own config says.
	defaults topic.Defaults
	// clusterID is the cluster's id, set once by the first leader.
	clusterID string
	// deleted maps a recently deleted topic to the leader's time of the
	// deletion (ms), for RecentlyDeleted. Memory only: a restart forgets
	// it, which only ends quarantines early.
	deleted  map[string]int64
	deletedQ []quarantined // the same deletions, in apply order

	// txnMu guards producers, txns and every partition's open and aborted
	// transaction lists against readers; only the apply goroutine writes.
	txnMu sync.RWMutex
	txns  map[string]*TxnState

	// Owned by the apply goroutine (readers take txnMu).
	producers map[int64]*producerState
	nextPID   int64
	applied   uint64
	dirty     dirtySet
	// tombstones are deleted partitions' directories waiting for the
	// checkpoint that forgets them (tombstone.go).
	tombstones []tombstone
	// dataDirDirty is set when apply created or renamed a partition
	// directory: the checkpoint fsyncs the data directory before it
	// commits, so that a power loss cannot leave a directory entry older
	// than the state that describes it.
	dataDirDirty bool
	// current is the raft index being applied. stopped is set at the
	// first storage error inside apply (fail): from then on nothing is
	// applied and nothing checkpointed, and the node stops.
	current uint64
	stopped bool
	// failErr is set once, before failCh is closed.
	failOnce sync.Once
	failErr  error
	failCh   chan struct{}
	// bytesSinceCheckpoint and checkpointDue trigger checkpoints.
	bytesSinceCheckpoint int64
	// appliedBytes counts record bytes applied since start; the store's
	// background loop reads it to decide when to take a raft snapshot.
	appliedBytes atomic.Int64
	// ckptTimer times checkpoints from capture to commit, ckptStall the
	// time apply spent on them (Store.CheckpointStats).
	ckptTimer checkpointTimer
	ckptStall checkpointTimer
	// ckptBusy: a checkpoint is in flight; its commit reports on ckptDone
	// (capacity 1). FSM goroutine only (checkpoint_job.go).
	ckptBusy bool
	ckptDone chan error
	// installs counts snapshots installed from a leader.
	installs      atomic.Int64
	checkpointDue atomic.Bool

	// procs are the processors (proc.go).
	procs procTable
	// acls are the access control bindings (acls.go).
	acls aclTable
	// quotas are the client quotas (quotas.go).
	quotas quotaTable

	appliedIndex atomic.Uint64
	notifyMu     sync.Mutex
	notifyCh     chan struct{}
}

// dirtySet is what changed since the last checkpoint.
type dirtySet struct {
	meta      bool
	topics    map[string]bool // created, altered or deleted
	producers map[int64]bool
	parts     map[string]*partition
	offsets   map[string]bool // offsetKey
	members   map[string]bool // group
	txns      map[string]bool
	scram     map[ScramKey]bool
	scramBoot map[ScramKey]bool
	acls      map[string]bool // acl.Binding.Key
	quotas    map[quota.Entity]bool
}

func (d *dirtySet) reset() {
	d.meta = false
	d.topics = make(map[string]bool)
	d.producers = make(map[int64]bool)
	d.parts = make(map[string]*partition)
	d.offsets = make(map[string]bool)
	d.members = make(map[string]bool)
	d.txns = make(map[string]bool)
	d.scram = make(map[ScramKey]bool)
	d.scramBoot = make(map[ScramKey]bool)
	d.acls = make(map[string]bool)
	d.quotas = make(map[quota.Entity]bool)
}

// checkpointBytes bounds how much appended data waits for a checkpoint, and
// with it how much raft log a restart replays.
const checkpointBytes = 64 << 20

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		if f.stopped {
			out[i] = errStopped
			continue
		}
		if l.Index <= f.applied {
			// Already covered by the checkpoint we recovered from.
			out[i] = nil
			continue
		}
		f.current = l.Index
		if l.Type == raft.LogCommand {
			out[i] = f.applyCommand(l)
		}
		if f.stopped {
			// The entry is not applied: a restart replays it.
			out[i] = errStopped
			continue
		}
		f.applied = l.Index
	}
	f.appliedIndex.Store(f.applied)
	f.wake()
	if f.stopped {
		return out
	}
	err := f.pollCheckpoint()
	if err == nil && (f.bytesSinceCheckpoint >= checkpointBytes || f.checkpointDue.Load()) {
		err = f.startCheckpoint()
	}
	if err != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages and marked them clean: a later checkpoint could then
		// "succeed" over data that is gone. Stop instead.
		f.fail(fmt.Errorf("checkpoint: %w", err))
	}
	return out
}

func (f *fsm) applyCommand(l *raft.Log) any {
	if len(l.Data) == 0 {
		return fmt.Errorf("%w: empty command at index %d", ErrInvalidCommand, l.Index)
	}
	switch t := cmdType(l.Data[0]); t {
	case cmdProduce, cmdProduceTxn:
		c, err := decodeProduce(l.Data)
		if err != nil {
			return err
		}
		return f.applyProduce(c, int32(l.Term))
	case cmdCreateTopic:
		var c createTopicCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyCreateTopic(&c)
	case cmdDeleteTopic:
		var c deleteTopicCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyDeleteTopic(&c)
	case cmdCreatePartitions:
		var c createPartitionsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyCreatePartitions(&c)
	case cmdAlterConfigs:
		var c alterConfigsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyAlterConfigs(&c)
	case cmdInitProducer:
		var c initProducerCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyInitProducer(&c)
	case cmdDeleteRecords:
		var c deleteRecordsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyDeleteRecords(&c)
	case cmdRetention:
		var c retentionCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applyRetention(&c)
		return nil
	case cmdRegisterBroker:
		var c registerBrokerCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.mu.Lock()
		// A node id's registration is bound to the principal that first
		// made one with the authorizer on: decided here, where every
		// replica decides alike, so that two registrations racing on the
		// leader cannot both pass its check. One without a principal
		// (the authorizer off) keeps the binding.
		if cur, ok := f.brokers[c.Broker.NodeID]; ok && cur.Principal != "" {
			if c.Broker.Principal != "" && c.Broker.Principal != cur.Principal {
				f.mu.Unlock()
				return fmt.Errorf("%w: node %d is registered by %s, not %s", ErrForeignRegistration, c.Broker.NodeID, cur.Principal, c.Broker.Principal)
			}
			c.Broker.Principal = cur.Principal
		}
		f.brokers[c.Broker.NodeID] = c.Broker
		f.mu.Unlock()
		f.dirty.meta = true
		return nil
	case cmdInitTxnProducer:
		var c initTxnProducerCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyInitTxnProducer(&c, int32(l.Term))
	case cmdAddPartitionsToTxn:
		var c addPartitionsToTxnCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyAddPartitionsToTxn(&c)
	case cmdAddOffsetsToTxn:
		var c addOffsetsToTxnCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyAddOffsetsToTxn(&c)
	case cmdTxnOffsetCommit:
		var c txnOffsetCommitCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyTxnOffsetCommit(&c)
	case cmdEndTxn:
		var c endTxnCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyEndTxn(&c, int32(l.Term))
	case cmdOffsetCommit:
		var c offsetCommitCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyOffsetCommit(&c)
	case cmdOffsetDelete:
		var c offsetDeleteCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applyOffsetDelete(&c)
		return nil
	case cmdUnregisterBroker:
		var c unregisterBrokerCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applyUnregisterBroker(&c)
		return nil
	case cmdSetClusterID:
		var c setClusterIDCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applySetClusterID(&c)
		return nil
	case cmdExpireProducers:
		var c expireProducersCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applyExpireProducers(&c)
		return nil
	case cmdSetTopicDefaults:
		var c setTopicDefaultsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applySetTopicDefaults(&c)
	case cmdExpireOffsets:
		var c expireOffsetsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		f.applyExpireOffsets(&c)
		return nil
	case cmdProcDeploy:
		var c procDeployCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyProcDeploy(&c, l.Index)
	case cmdProcPause:
		var c procPauseCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyProcPause(&c)
	case cmdProcDelete:
		var c procDeleteCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyProcDelete(&c)
	case cmdProcStep:
		c, err := decodeStep(l.Data)
		if err != nil {
			return err
		}
		return f.applyProcStep(c, int32(l.Term))
	case cmdGroupMembers:
		var c groupMembersCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyGroupMembers(&c, int32(l.Term))
	case cmdScramAlter:
		var c scramAlterCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyScramAlter(&c)
	case cmdCreateACLs:
		if err := checkACLCommand(l.Data); err != nil {
			return err
		}
		var c createACLsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyCreateACLs(&c)
	case cmdDeleteACLs:
		if err := checkACLCommand(l.Data); err != nil {
			return err
		}
		var c deleteACLsCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyDeleteACLs(&c)
	case cmdAlterQuotas:
		var c alterQuotasCmd
		if err := decodeJSON(l.Data, &c); err != nil {
			return err
		}
		return f.applyAlterQuotas(&c)
	default:
		// Skipping it would leave this replica different from the newer
		// ones that understood it.
		return f.fail(fmt.Errorf("unknown command type %d at raft index %d: a newer version of brokerd wrote it; upgrade this node", t, l.Index))
	}
}

// errStopped answers entries handed to an FSM that has stopped. The client
// sees a retriable KAFKA_STORAGE_ERROR and moves to another node.
var errStopped = fmt.Errorf("%w: this node stopped applying raft entries after a storage error", ErrStorage)

// fail stops the FSM at an error it must not continue past: a storage
// error inside apply, or a command it cannot understand. The entry being
// applied is not counted as applied, nothing after it is applied, no
// checkpoint is taken again, and the node stops (Store.Failed). Its last
// checkpoint stays consistent, so a restart replays from there; if the
// fault persists, wipe the data directory and the node is rebuilt from its
// peers. It returns the error to answer the entry with.
func (f *fsm) fail(err error) error {
	f.stopped = true
	f.markFailed(fmt.Errorf("raft entry %d could not be applied, so this node stops applying: %w", f.current, err))
	return errStopped
}

// failed reports whether the node has failed (markFailed).
func (f *fsm) failed() bool {
	select {
	case <-f.failCh:
		return true
	default:
		return false
	}
}

// markFailed reports the node's failure (Store.Failed) once; the first
// error wins. Any goroutine may call it; only apply stops applying.
func (f *fsm) markFailed(err error) {
	f.failOnce.Do(func() {
		f.failErr = err
		f.logger.Error("state machine stopped: fix the cause (or wipe the data directory to rebuild this node from its peers) and restart", "err", err)
		close(f.failCh)
	})
}

// wake releases every goroutine waiting in changed().
func (f *fsm) wake() {
	f.notifyMu.Lock()
	ch := f.notifyCh
	f.notifyCh = make(chan struct{})
	f.notifyMu.Unlock()
	close(ch)
}

// changed returns a channel closed after the next applied batch.
func (f *fsm) changed() <-chan struct{} {
	f.notifyMu.Lock()
	defer f.notifyMu.Unlock()
	return f.notifyCh
}
