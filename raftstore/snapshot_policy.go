package raftstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Raft keeps every entry since its last snapshot, and a restart reads all of
// them back (raft scans them for configuration changes), even though the
// FSM's checkpoint already covers nearly all of them. A snapshot here is
// only a manifest, so brokerd takes one soon after data is checkpointed:
// raft then trims its log to TrailingLogs entries, the disk holds the data
// once plus a short tail, and a restart reads seconds of log, not minutes.

// Defaults for when a snapshot is due.
const (
	// DefaultSnapshotBytes: record bytes applied since the last snapshot.
	DefaultSnapshotBytes = 64 << 20
	// DefaultSnapshotInterval: any entry applied since the last snapshot,
	// this long ago.
	DefaultSnapshotInterval = 30 * time.Second
)

// snapshotPolicy remembers where the last snapshot stood. It is used by the
// background loop only.
type snapshotPolicy struct {
	bytes int64
	index uint64
	at    time.Time
}

// maybeSnapshot asks raft for a snapshot when enough was applied since the
// last one.
func (s *Store) maybeSnapshot(p *snapshotPolicy, now time.Time) {
	bytes, index := s.fsm.appliedBytes.Load(), s.AppliedIndex()
	if index <= p.index {
		return
	}
	if bytes-p.bytes < s.cfg.SnapshotBytes && now.Sub(p.at) < s.cfg.SnapshotInterval {
		return
	}
	err := s.raft.Snapshot().Error()
	switch {
	case err == nil, errors.Is(err, raft.ErrNothingNewToSnapshot):
		*p = snapshotPolicy{bytes: bytes, index: index, at: now}
	case errors.Is(err, raft.ErrRaftShutdown):
	default:
		s.logger.Warn("raft snapshot failed", "err", err)
	}
}

// checkSnapshotGap refuses to start raft on a snapshot that claims more
// than the FSM's checkpoint holds. With NoSnapshotRestoreOnStart raft takes
// its newest snapshot as applied and replays only the entries after it, so
// commands between the checkpoint and the snapshot would be skipped
// silently: that happens when raft saved a snapshot received from the
// leader and the node stopped before the FSM restored it. A gap made only
// of entries the FSM never sees (no-ops, barriers, configuration changes)
// is harmless.
func checkSnapshotGap(snaps raft.SnapshotStore, logs raft.LogStore, applied uint64) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list raft snapshots: %w", err)
	}
	if len(list) == 0 || list[0].Index <= applied {
		return nil
	}
	snap := list[0]
	for i := applied + 1; i <= snap.Index; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("raft snapshot %s covers the log up to index %d, but this node's state is checkpointed only up to %d and raft no longer holds entry %d (%v): the snapshot was saved but never applied. Wipe this node's data directory so that it is rebuilt from its peers", snap.ID, snap.Index, applied, i, err)
		}
		if l.Type == raft.LogCommand {
			return fmt.Errorf("raft snapshot %s covers the log up to index %d, but this node's state is checkpointed only up to %d and entry %d was never applied: the snapshot was saved but never applied. Wipe this node's data directory so that it is rebuilt from its peers", snap.ID, snap.Index, applied, i)
		}
	}
	return nil
}
