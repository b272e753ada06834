package raftstore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// checkpointProcessors writes what changed in the processors since the
// last checkpoint into tx: dropped state buckets go first (a redeploy drops
// and refills in one checkpoint), then infos, then state changes.
func (f *fsm) checkpointProcessors(tx *bolt.Tx) error {
	t := &f.procs
	t.mu.RLock()
	defer t.mu.RUnlock()
	pb, err := tx.CreateBucketIfNotExists(bucketProcessors)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketProcessors, err)
	}
	root, err := tx.CreateBucketIfNotExists(bucketProcState)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketProcState, err)
	}
	for name := range t.dropped {
		if root.Bucket([]byte(name)) != nil {
			if err := root.DeleteBucket([]byte(name)); err != nil {
				return fmt.Errorf("drop state of processor %s: %w", name, err)
			}
		}
	}
	for name := range t.dirty {
		info := t.infos[name]
		if info == nil {
			if err := pb.Delete([]byte(name)); err != nil {
				return err
			}
			continue
		}
		if err := putJSON(pb, []byte(name), info); err != nil {
			return err
		}
	}
	for name, d := range t.delta {
		b, err := root.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return fmt.Errorf("state of processor %s: %w", name, err)
		}
		// In key order: bbolt inserts into its nodes far faster in
		// order than at random.
		for _, k := range slices.Sorted(maps.Keys(d)) {
			v := d[k]
			if v == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v)
			}
			if err != nil {
				return fmt.Errorf("state of processor %s: %w", name, err)
			}
		}
	}
	return nil
}

// checkpointedProcessors forgets the changes a committed checkpoint holds.
func (f *fsm) checkpointedProcessors() {
	t := &f.procs
	t.mu.Lock()
	clear(t.delta)
	clear(t.dirty)
	clear(t.dropped)
	t.mu.Unlock()
}

// loadProcessors reads the processors' infos (their state stays in bbolt).
func (f *fsm) loadProcessors(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketProcessors, bucketProcState} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return tx.Bucket(bucketProcessors).ForEach(func(k, v []byte) error {
		var p ProcessorInfo
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode processor %s: %w", k, err)
		}
		if p.Offsets == nil {
			p.Offsets = map[string]int64{}
		}
		f.procs.infos[p.Name] = &p
		return nil
	})
}

// manifestProcessors adds the processors and all their state to a snapshot
// manifest. It runs right after a checkpoint, so bbolt holds everything.
func (f *fsm) manifestProcessors(m *manifest) error {
	t := &f.procs
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, p := range t.infos {
		m.Processors = append(m.Processors, p.clone())
	}
	if len(t.infos) == 0 {
		return nil
	}
	m.ProcessorState = map[string][]StateEntry{}
	return f.db.View(func(tx *bolt.Tx) error {
		for name := range t.infos {
			b := procBucket(tx, name)
			if b == nil {
				continue
			}
			var entries []StateEntry
			if err := b.ForEach(func(k, v []byte) error {
				entries = append(entries, StateEntry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
				return nil
			}); err != nil {
				return err
			}
			m.ProcessorState[name] = entries
		}
		return nil
	})
}

// writeManifestProcessors replaces the processors in the state DB with the
// manifest's.
func writeManifestProcessors(tx *bolt.Tx, m *manifest) error {
	for _, name := range [][]byte{bucketProcessors, bucketProcState} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("clear bucket %s: %w", name, err)
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	pb, root := tx.Bucket(bucketProcessors), tx.Bucket(bucketProcState)
	for _, p := range m.Processors {
		if err := putJSON(pb, []byte(p.Name), p); err != nil {
			return err
		}
		b, err := root.CreateBucket([]byte(p.Name))
		if err != nil {
			return fmt.Errorf("state of processor %s: %w", p.Name, err)
		}
		for _, e := range m.ProcessorState[p.Name] {
			if err := b.Put(e.Key, e.Value); err != nil {
				return fmt.Errorf("state of processor %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

// validateProcessors checks a manifest's processors before anything is
// written from it.
func (m *manifest) validateProcessors() error {
	seen := map[string]bool{}
	for _, p := range m.Processors {
		if p == nil || checkProcessorName(p.Name) != nil || seen[p.Name] {
			return fmt.Errorf("%w: an invalid or repeated processor", errBadSnapshot)
		}
		seen[p.Name] = true
	}
	for name, entries := range m.ProcessorState {
		if !seen[name] {
			return fmt.Errorf("%w: state of no processor %q", errBadSnapshot, name)
		}
		for _, e := range entries {
			if len(e.Key) == 0 || len(e.Key) > maxStateKeyBytes || len(e.Value) > maxStateValueBytes {
				return fmt.Errorf("%w: processor %s state entry of %d+%d bytes", errBadSnapshot, name, len(e.Key), len(e.Value))
			}
		}
	}
	return nil
}
