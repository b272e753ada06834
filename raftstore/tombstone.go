package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// Deleting a topic is a write like any other, so it is crash-safe at every
// instant:
//
//  1. apply closes each partition's log and renames its directory to a
//     tombstone, "<topic>-<partition>.<raft index>-delete" (Kafka's
//     "-delete" suffix, with the deletion's raft index);
//  2. the next checkpoint forgets the topic;
//  3. once that checkpoint has committed, the tombstones are removed.
//
// A crash between 1 and 2 leaves a checkpoint that still lists the topic:
// at start, restoreTombstones renames the tombstone back (raft then replays
// the deletion). A crash between 2 and 3 leaves tombstones the checkpoint
// covers: they are removed at start.

const tombstoneSuffix = "-delete"

// tombstone is a renamed partition directory waiting for the checkpoint
// that forgets it.
type tombstone struct {
	path  string
	index uint64
}

func tombstoneName(dir string, index uint64) string {
	return dir + "." + strconv.FormatUint(index, 10) + tombstoneSuffix
}

// parseTombstone splits "<partition dir>.<index>-delete".
func parseTombstone(name string) (partDir string, index uint64, ok bool) {
	rest, found := strings.CutSuffix(name, tombstoneSuffix)
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", 0, false
	}
	index, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil || !isPartitionDir(rest[:i]) {
		return "", 0, false
	}
	return rest[:i], index, true
}

// buryPartition closes a deleted partition's log and renames its
// directory to a tombstone. An error is a storage error inside apply.
func (f *fsm) buryPartition(p *partition, index uint64) error {
	if err := p.log.Detach(); err != nil {
		// Closing files of data about to be deleted; nothing is lost.
		f.logger.Warn("close deleted partition", "partition", p.key(), "err", err)
	}
	dir := filepath.Join(f.dataDir, topic.PartitionDir(p.topic, p.index))
	dst := tombstoneName(dir, index)
	if err := os.Rename(dir, dst); err != nil {
		return fmt.Errorf("%w: delete partition %s: %v", ErrStorage, p.key(), err)
	}
	f.tombstones = append(f.tombstones, tombstone{path: dst, index: index})
	return nil
}

// removeTombstones deletes the tombstones a committed checkpoint covers. A
// failure only leaves disk space in use until the next start.
func (f *fsm) removeTombstones() {
	keep := f.tombstones[:0]
	for _, t := range f.tombstones {
		if t.index > f.applied {
			keep = append(keep, t)
			continue
		}
		if err := os.RemoveAll(t.path); err != nil {
			f.logger.Error("remove deleted partition; it is retried at the next start", "dir", t.path, "err", err)
		}
	}
	f.tombstones = keep
}

// restoreTombstones reconciles tombstones with a checkpoint at applied,
// before the partitions are opened. Tombstones the checkpoint covers are
// removed. For each partition directory, the earliest tombstone after the
// checkpoint holds the data the checkpoint describes: it is renamed back
// (raft replays its deletion), replacing any directory created after it.
// Later tombstones hold only data that raft replays: they are removed.
func restoreTombstones(dataDir string, applied uint64) error {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	type entry struct {
		name  string
		index uint64
	}
	byDir := map[string][]entry{}
	for _, e := range ents {
		if dir, idx, ok := parseTombstone(e.Name()); ok && e.IsDir() {
			byDir[dir] = append(byDir[dir], entry{e.Name(), idx})
		}
	}
	if len(byDir) == 0 {
		return nil
	}
	for dir, ts := range byDir {
		slices.SortFunc(ts, func(a, b entry) int { return compareU64(a.index, b.index) })
		restore := ""
		for _, t := range ts {
			if t.index > applied && restore == "" {
				restore = t.name
				continue
			}
			if err := os.RemoveAll(filepath.Join(dataDir, t.name)); err != nil {
				return fmt.Errorf("remove deleted partition %s: %w", t.name, err)
			}
		}
		if restore == "" {
			continue
		}
		live := filepath.Join(dataDir, dir)
		if err := os.RemoveAll(live); err != nil {
			return fmt.Errorf("clear %s before restoring its deletion: %w", dir, err)
		}
		if err := os.Rename(filepath.Join(dataDir, restore), live); err != nil {
			return fmt.Errorf("restore %s (its deletion was not checkpointed): %w", restore, err)
		}
	}
	return log.SyncDir(dataDir)
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
