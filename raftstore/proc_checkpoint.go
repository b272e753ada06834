package raftstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// procCapture is what a checkpoint took from the processors' memory
// layer: the state changes it writes, and the drops it carries out.
type procCapture struct {
	delta   map[string]map[string][]byte
	dropped map[string]uint64
}

// checkpointProcessors captures what changed in the processors since the
// last checkpoint: dropped state buckets go first (a redeploy drops and
// refills in one checkpoint), then infos, then state changes. The state
// changes stay in memory, for readers, until the commit has landed
// (checkpointed).
func (f *fsm) checkpointProcessors(job *ckptJob) error {
	t := &f.procs
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.dropped {
		job.ops = append(job.ops, ckptOp{kind: opDropBucket, bucket: bucketProcState, key: []byte(name)})
	}
	for name := range t.dirty {
		if info := t.infos[name]; info != nil {
			if err := job.putJSON(bucketProcessors, []byte(name), info); err != nil {
				return err
			}
		} else {
			job.delete(bucketProcessors, []byte(name))
		}
	}
	clear(t.dirty)
	c := procCapture{delta: make(map[string]map[string][]byte, len(t.delta)), dropped: maps.Clone(t.dropped)}
	for name, d := range t.delta {
		c.delta[name] = maps.Clone(d)
		// In key order: bbolt inserts into its nodes far faster in
		// order than at random.
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if v := d[k]; v == nil {
				job.ops = append(job.ops, ckptOp{kind: opDelete, bucket: bucketProcState, sub: []byte(name), key: []byte(k)})
			} else {
				job.ops = append(job.ops, ckptOp{kind: opPut, bucket: bucketProcState, sub: []byte(name), key: []byte(k), val: v})
			}
		}
	}
	job.procs = c
	return nil
}

// checkpointed forgets what a committed checkpoint wrote to bbolt: each
// state change it wrote, unless the key changed again since (to another
// value) or the processor's state was dropped since, and each drop it
// carried out, unless the processor was dropped again since.
func (t *procTable) checkpointed(c *procCapture) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, d := range c.delta {
		if t.dropped[name] != c.dropped[name] {
			continue // dropped since: the delta is a new deployment's
		}
		cur := t.delta[name]
		for k, v := range d {
			if now, ok := cur[k]; ok && (now == nil) == (v == nil) && bytes.Equal(now, v) {
				delete(cur, k)
			}
		}
		if len(cur) == 0 {
			delete(t.delta, name)
		}
	}
	for name, n := range c.dropped {
		if t.dropped[name] == n {
			delete(t.dropped, name)
		}
	}
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
