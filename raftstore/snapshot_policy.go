package raftstore

import (
	"context"
	"encoding/json"
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
	// DefaultTrailingBytes: about how many record bytes of raft log stay
	// behind a snapshot.
	DefaultTrailingBytes = 256 << 20
	// minTrailingLogs: entries kept behind a snapshot however large.
	minTrailingLogs = 64
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
	s.boundTrailing(bytes-p.bytes, index-p.index)
	err := s.await(context.Background(), s.raft.Snapshot())
	switch {
	case err == nil, errors.Is(err, raft.ErrNothingNewToSnapshot):
		*p = snapshotPolicy{bytes: bytes, index: index, at: now}
	case errors.Is(err, ErrClosed):
	default:
		s.logger.Warn("raft snapshot failed", "err", err)
	}
}

// boundTrailing sets how many entries raft keeps behind the next snapshot:
// TrailingLogs, or fewer when the entries since the last snapshot averaged
// so many bytes that TrailingLogs of them would exceed TrailingBytes (a
// 10 GiB log of 2 MB produce batches kept 1.8 GB of raft log behind every
// snapshot), but never fewer than minTrailingLogs.
func (s *Store) boundTrailing(bytes int64, entries uint64) {
	if entries == 0 || bytes <= 0 {
		return
	}
	want := s.cfg.TrailingLogs
	if avg := uint64(bytes) / entries; avg > 0 {
		want = min(want, max(minTrailingLogs, uint64(s.cfg.TrailingBytes)/avg))
	}
	rc := s.raft.ReloadableConfig()
	if rc.TrailingLogs == want {
		return
	}
	rc.TrailingLogs = want
	if err := s.raft.ReloadConfig(rc); err != nil {
		s.logger.Warn("set raft trailing logs", "entries", want, "err", err)
	}
}

// requestSnapshot asks the background loop for a snapshot soon, without
// waiting (it is called from inside raft).
func (s *Store) requestSnapshot() {
	select {
	case s.snapNow <- struct{}{}:
	default:
	}
}

// dropLogBehindSnapshot finishes what raft does after installing a
// snapshot and a crash may have cut short: a log that ends below the newest
// snapshot holds nothing the snapshot does not, and a log store that must
// stay contiguous (raft-wal) would refuse the entries after the snapshot.
func dropLogBehindSnapshot(snaps *snapshotStore, logs raft.LogStore) error {
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return err
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return fmt.Errorf("raft log first index: %w", err)
	}
	last, err := logs.LastIndex()
	if err != nil {
		return fmt.Errorf("raft log last index: %w", err)
	}
	if last == 0 || last >= list[0].Index {
		return nil
	}
	if err := logs.DeleteRange(first, last); err != nil {
		return fmt.Errorf("drop raft log entries %d-%d behind snapshot %s: %w", first, last, list[0].ID, err)
	}
	return nil
}

// checkSnapshotGap refuses to start raft on a snapshot that holds more than
// the FSM's checkpoint. With NoSnapshotRestoreOnStart raft takes its newest
// snapshot as applied and replays only the entries after it, so commands
// between the checkpoint and the snapshot would be skipped silently: that
// happens when raft saved a snapshot received from the leader and the node
// stopped before the FSM restored it, and installReceived could not finish
// the install (its segment files did not all arrive). The snapshot's own
// manifest says what it holds; raft's index for it may be higher only by
// entries the FSM never sees (no-ops, barriers, configuration changes).
func checkSnapshotGap(snaps *snapshotStore, applied uint64) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list raft snapshots: %w", err)
	}
	if len(list) == 0 || list[0].Index <= applied {
		return nil
	}
	snap := list[0]
	_, rc, err := snaps.inner.Open(snap.ID)
	if err != nil {
		return fmt.Errorf("open raft snapshot %s: %w", snap.ID, err)
	}
	raw, err := readSnapManifest(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("raft snapshot %s: %w", snap.ID, err)
	}
	var m struct {
		AppliedIndex uint64 `json:"applied_index"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("raft snapshot %s: decode manifest: %w", snap.ID, err)
	}
	if m.AppliedIndex <= applied {
		return nil
	}
	return fmt.Errorf("raft snapshot %s holds the state up to index %d, but this node's state is checkpointed only up to %d and the snapshot could not be installed (its segment files did not all arrive or do not match its manifest): it was saved but never installed. Remove this node's data directory and restart it: it is rebuilt from its peers", snap.ID, m.AppliedIndex, applied)
}

// SnapshotNow takes a raft snapshot at once (raft then trims its log).
func (s *Store) SnapshotNow() error {
	err := s.await(context.Background(), s.raft.Snapshot())
	if err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return fmt.Errorf("raft snapshot: %w", err)
	}
	return nil
}
