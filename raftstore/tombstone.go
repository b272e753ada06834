package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// Deleting a topic is a write like any other, so it is crash-safe at every
// instant:
//
//  1. apply closes each partition's log and renames its directory into the
//     tombstone directory of the deletion's raft index,
//     "<data>/.deleted/<index>/<topic>-<partition>" (the partition
//     directory's own name, so that no name grows past what the
//     filesystem allows, whatever the topic's length);
//  2. the next checkpoint forgets the topic;
//  3. once that checkpoint has committed, the tombstones are removed, in the
//     background.
//
// A crash between 1 and 2 leaves a checkpoint that still lists the topic:
// at start, restoreTombstones moves the tombstone back (raft then replays
// the deletion). A crash between 2 and 3 leaves tombstones the checkpoint
// covers: they are removed at start.

// deletedDir holds the tombstones, one subdirectory per deletion's index.
// Its name has no "-", so it never parses as a partition directory.
const deletedDir = ".deleted"

// tombstone is a renamed partition directory waiting for the checkpoint
// that forgets it.
type tombstone struct {
	path  string
	index uint64
}

func tombstoneDir(dataDir string, index uint64) string {
	return filepath.Join(dataDir, deletedDir, strconv.FormatUint(index, 10))
}

// buryPartition closes a deleted partition's log and moves its directory
// into the tombstone directory. An error is a storage error inside apply.
func (f *fsm) buryPartition(p *partition, index uint64) error {
	// A checkpoint in flight may be syncing this log: its commit must not
	// describe data whose sync the detach cut short.
	if err := f.awaitCheckpoint(); err != nil {
		return fmt.Errorf("%w: delete partition %s: %v", ErrStorage, p.key(), err)
	}
	if err := p.log.Detach(); err != nil {
		// Closing files of data about to be deleted; nothing is lost.
		f.logger.Warn("close deleted partition", "partition", p.key(), "err", err)
	}
	name := topic.PartitionDir(p.topic, p.index)
	tdir := tombstoneDir(f.dataDir, index)
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return fmt.Errorf("%w: delete partition %s: %v", ErrStorage, p.key(), err)
	}
	dst := filepath.Join(tdir, name)
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("%w: delete partition %s: %v", ErrStorage, p.key(), err)
	}
	if err := os.Rename(filepath.Join(f.dataDir, name), dst); err != nil {
		return fmt.Errorf("%w: delete partition %s: %v", ErrStorage, p.key(), err)
	}
	f.tombstones = append(f.tombstones, tombstone{path: dst, index: index})
	f.dataDirDirty = true
	return nil
}

// tombstoneDirs are the directories to fsync so that the renames into
// tombstone directories are durable; the checkpoint syncs them before it
// commits.
func (f *fsm) tombstoneDirs() []string {
	var dirs []string
	seen := map[string]bool{}
	for _, t := range f.tombstones {
		if d := filepath.Dir(t.path); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	if len(f.tombstones) > 0 {
		dirs = append(dirs, filepath.Join(f.dataDir, deletedDir))
	}
	return dirs
}

// takeTombstones removes from f.tombstones those a checkpoint at applied
// covers, and returns them.
func (f *fsm) takeTombstones(applied uint64) []tombstone {
	var done []tombstone
	keep := f.tombstones[:0]
	for _, t := range f.tombstones {
		if t.index > applied {
			keep = append(keep, t)
		} else {
			done = append(done, t)
		}
	}
	f.tombstones = keep
	return done
}

// removeTombstones deletes, in the background, tombstones a committed
// checkpoint covers: removing gigabytes must not stall apply. What a crash
// or a failure leaves is removed at the next start.
func removeTombstones(logger *slog.Logger, ts []tombstone) {
	var done []string
	for _, t := range ts {
		done = append(done, filepath.Dir(t.path))
	}
	if len(done) == 0 {
		return
	}
	go func() {
		for _, d := range done {
			if err := os.RemoveAll(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				logger.Error("remove deleted partitions; retried at the next start", "dir", d, "err", err)
			}
		}
	}()
}

// restoreTombstones reconciles tombstones with a checkpoint at applied,
// before the partitions are opened. Tombstones the checkpoint covers are
// removed. For each partition directory, the earliest tombstone after the
// checkpoint holds the data the checkpoint describes: it moves back
// (raft replays its deletion), replacing any directory created after it.
// Later tombstones hold only data that raft replays: they are removed.
func restoreTombstones(dataDir string, applied uint64) error {
	root := filepath.Join(dataDir, deletedDir)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", root, err)
	}
	var indexes []uint64
	for _, e := range ents {
		idx, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || !e.IsDir() {
			continue
		}
		indexes = append(indexes, idx)
	}
	slices.Sort(indexes)
	restored := map[string]bool{}
	for _, idx := range indexes {
		tdir := tombstoneDir(dataDir, idx)
		if idx > applied {
			parts, err := os.ReadDir(tdir)
			if err != nil {
				return fmt.Errorf("read %s: %w", tdir, err)
			}
			for _, p := range parts {
				if !p.IsDir() || !isPartitionDir(p.Name()) || restored[p.Name()] {
					continue
				}
				// The earliest deletion after the checkpoint: its data is
				// what the checkpoint describes.
				live := filepath.Join(dataDir, p.Name())
				if err := os.RemoveAll(live); err != nil {
					return fmt.Errorf("clear %s before restoring its deletion: %w", p.Name(), err)
				}
				if err := os.Rename(filepath.Join(tdir, p.Name()), live); err != nil {
					return fmt.Errorf("restore %s (its deletion at index %d was not checkpointed): %w", p.Name(), idx, err)
				}
				restored[p.Name()] = true
			}
		}
		if err := os.RemoveAll(tdir); err != nil {
			return fmt.Errorf("remove deleted partitions %s: %w", tdir, err)
		}
	}
	if err := log.SyncDir(root); err != nil {
		return err
	}
	return log.SyncDir(dataDir)
}
