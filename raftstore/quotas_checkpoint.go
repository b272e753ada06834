package raftstore

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/brokerd/brokerd/raftstore/quota"
)

// bucketQuotas holds one entry per quota entity: its StoreKey and its
// quota.Entry as JSON.
var bucketQuotas = []byte("client_quotas")

// checkpointQuotas captures the entities changed since the last
// checkpoint. FSM goroutine only.
func (f *fsm) checkpointQuotas(job *ckptJob) error {
	for e := range f.dirty.quotas {
		v, ok := f.quotas.byEntity[e]
		if !ok {
			job.delete(bucketQuotas, e.StoreKey())
			continue
		}
		if err := job.putJSON(bucketQuotas, e.StoreKey(), quota.Entry{Entity: e, Values: v}); err != nil {
			return err
		}
	}
	return nil
}

// loadQuotas reads the quotas of a checkpoint and builds their index.
func (f *fsm) loadQuotas(tx *bolt.Tx) error {
	m := map[quota.Entity]quota.Values{}
	if b := tx.Bucket(bucketQuotas); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var e quota.Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode client quota %q: %w", k, err)
			}
			m[e.Entity] = e.Values
			return nil
		})
		if err != nil {
			return err
		}
	}
	f.quotas.set(m)
	return nil
}

// manifestQuotas adds the quotas to a snapshot manifest. FSM goroutine.
func (f *fsm) manifestQuotas(m *manifest) {
	m.Quotas = append(m.Quotas, f.quotas.index.Load().All()...)
}

// writeManifestQuotas replaces the quotas in the state DB with the
// manifest's.
func writeManifestQuotas(tx *bolt.Tx, m *manifest) error {
	if tx.Bucket(bucketQuotas) != nil {
		if err := tx.DeleteBucket(bucketQuotas); err != nil {
			return fmt.Errorf("clear bucket %s: %w", bucketQuotas, err)
		}
	}
	b, err := tx.CreateBucket(bucketQuotas)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketQuotas, err)
	}
	for _, e := range m.Quotas {
		if err := putJSON(b, e.Entity.StoreKey(), e); err != nil {
			return err
		}
	}
	return nil
}

// validateQuotas checks a manifest's quotas before anything is written
// from it: valid, distinct, and no more than quota.MaxEntities.
func (m *manifest) validateQuotas() error {
	if len(m.Quotas) > quota.MaxEntities {
		return fmt.Errorf("%w: %d client quota entities (at most %d)", errBadSnapshot, len(m.Quotas), quota.MaxEntities)
	}
	seen := make(map[quota.Entity]bool, len(m.Quotas))
	for _, e := range m.Quotas {
		if err := e.Entity.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errBadSnapshot, err)
		}
		if err := e.Values.Validate(); err != nil {
			return fmt.Errorf("%w: %w", errBadSnapshot, err)
		}
		if e.Values.Empty() || seen[e.Entity] {
			return fmt.Errorf("%w: an empty or repeated client quota entity", errBadSnapshot)
		}
		seen[e.Entity] = true
	}
	return nil
}
