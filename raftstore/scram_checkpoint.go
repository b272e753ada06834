package raftstore

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketScram holds the SCRAM credentials, keyed by user NUL mechanism.
var bucketScram = []byte("scram_credentials")

// checkpointScram captures the credentials changed since the last
// checkpoint.
func (f *fsm) checkpointScram(job *ckptJob) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for k := range f.dirty.scram {
		c, ok := f.scram[k]
		if !ok {
			job.delete(bucketScram, k.storeKey())
			continue
		}
		if err := job.putJSON(bucketScram, k.storeKey(), c); err != nil {
			return err
		}
	}
	for k := range f.dirty.scramBoot {
		if err := job.putJSON(bucketScramBoot, k.storeKey(), k); err != nil {
			return err
		}
	}
	return nil
}

// loadScram reads the credentials of a checkpoint.
func (f *fsm) loadScram(tx *bolt.Tx) error {
	if err := f.loadScramBoot(tx); err != nil {
		return err
	}
	b := tx.Bucket(bucketScram)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var c ScramCredential
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("decode SCRAM credential %q: %w", k, err)
		}
		f.scram[c.key()] = c
		return nil
	})
}

// manifestScram lists the credentials for a snapshot.
func (f *fsm) manifestScram() []ScramCredential {
	out := make([]ScramCredential, 0, len(f.scram))
	for _, c := range f.scram {
		out = append(out, c)
	}
	sortScram(out)
	return out
}

// freshBucket empties (or creates) the bucket name.
func freshBucket(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	if tx.Bucket(name) != nil {
		if err := tx.DeleteBucket(name); err != nil {
			return nil, fmt.Errorf("clear bucket %s: %w", name, err)
		}
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", name, err)
	}
	return b, nil
}

// writeManifestScram stores a snapshot's credentials.
func writeManifestScram(tx *bolt.Tx, m *manifest) error {
	b, err := freshBucket(tx, bucketScram)
	if err != nil {
		return err
	}
	for i := range m.Scram {
		c := &m.Scram[i]
		if err := putJSON(b, c.key().storeKey(), c); err != nil {
			return err
		}
	}
	return writeManifestScramBoot(tx, m)
}
