package raftstore

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// bucketACLs holds one entry per binding: its key (acl.Binding.Key) and
// its JSON.
var bucketACLs = []byte("acls")

// checkpointACLs captures the bindings created or deleted since the last
// checkpoint. FSM goroutine only.
func (f *fsm) checkpointACLs(job *ckptJob) error {
	for k := range f.dirty.acls {
		b, ok := f.acls.byKey[k]
		if !ok {
			job.delete(bucketACLs, []byte(k))
			continue
		}
		if err := job.putJSON(bucketACLs, []byte(k), b); err != nil {
			return err
		}
	}
	return nil
}

// loadACLs reads the bindings and builds their index.
func (f *fsm) loadACLs(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bucketACLs)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketACLs, err)
	}
	byKey := map[string]acl.Binding{}
	err = b.ForEach(func(k, v []byte) error {
		var a acl.Binding
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("decode ACL %q: %w", k, err)
		}
		byKey[a.Key()] = a
		return nil
	})
	if err != nil {
		return err
	}
	f.acls.set(byKey)
	return nil
}

// manifestACLs adds the bindings to a snapshot manifest. FSM goroutine.
func (f *fsm) manifestACLs(m *manifest) {
	for _, b := range f.acls.byKey {
		m.ACLs = append(m.ACLs, b)
	}
}

// writeManifestACLs replaces the bindings in the state DB with the
// manifest's.
func writeManifestACLs(tx *bolt.Tx, m *manifest) error {
	if tx.Bucket(bucketACLs) != nil {
		if err := tx.DeleteBucket(bucketACLs); err != nil {
			return fmt.Errorf("clear bucket %s: %w", bucketACLs, err)
		}
	}
	b, err := tx.CreateBucket(bucketACLs)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketACLs, err)
	}
	for _, a := range m.ACLs {
		if err := putJSON(b, []byte(a.Key()), a); err != nil {
			return err
		}
	}
	return nil
}

// validateACLs checks a manifest's bindings before anything is written
// from it: valid, distinct, and no more than acl.MaxBindings.
func (m *manifest) validateACLs() error {
	if len(m.ACLs) > acl.MaxBindings {
		return fmt.Errorf("%w: %d ACLs (at most %d)", errBadSnapshot, len(m.ACLs), acl.MaxBindings)
	}
	seen := make(map[string]bool, len(m.ACLs))
	size := 0
	for _, b := range m.ACLs {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errBadSnapshot, err)
		}
		if size += b.Size(); size > acl.MaxStateBytes {
			return fmt.Errorf("%w: ACLs of more than %d bytes", errBadSnapshot, acl.MaxStateBytes)
		}
		k := b.Key()
		if seen[k] {
			return fmt.Errorf("%w: a repeated ACL", errBadSnapshot)
		}
		seen[k] = true
	}
	return nil
}
