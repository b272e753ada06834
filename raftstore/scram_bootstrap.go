package raftstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Bootstrap credentials (brokerd.sasl.bootstrap.users) are created once
// per cluster: the command that creates one also records, replicated,
// that it was bootstrapped, and a later bootstrap of the same user and
// mechanism does nothing, even if the credential was deleted since. A
// credential that already existed is marked and left alone.

// bucketScramBoot holds the bootstrapped markers, keyed as bucketScram.
var bucketScramBoot = []byte("scram_bootstrapped")

// ErrScramBootstrapped answers a bootstrap of a credential bootstrapped
// before: it is left alone, present or deleted.
var ErrScramBootstrapped = errors.New("credential already bootstrapped")

// markBootstrapped marks k: ErrScramBootstrapped if it was already,
// ErrScramLimit past MaxScramCredentials markers.
func (f *fsm) markBootstrapped(k ScramKey) error {
	if f.scramBoot[k] {
		return ErrScramBootstrapped
	}
	if len(f.scramBoot) >= MaxScramCredentials {
		return fmt.Errorf("%w: %d bootstrap markers at most", ErrScramLimit, MaxScramCredentials)
	}
	if f.scramBoot == nil {
		f.scramBoot = map[ScramKey]bool{}
	}
	f.scramBoot[k] = true
	f.dirty.scramBoot[k] = true
	return nil
}

// BootstrapScram creates bootstrap credentials through raft, each unless
// it exists (ErrScramCredentialExists) or was bootstrapped before
// (ErrScramBootstrapped), and marks each as bootstrapped, in one command.
func (s *Store) BootstrapScram(ctx context.Context, upserts []ScramCredential) ([]error, error) {
	return proposeFor[[]error](ctx, s, cmdScramAlter, scramAlterCmd{Upserts: upserts, IfAbsent: true, Bootstrap: true})
}

// ScramBootstrapped reports whether this node has applied the bootstrap
// marker of a user's credential for a mechanism.
func (s *Store) ScramBootstrapped(user, mechanism string) bool {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return s.fsm.scramBoot[ScramKey{User: user, Mechanism: mechanism}]
}

// loadScramBoot reads the markers of a checkpoint.
func (f *fsm) loadScramBoot(tx *bolt.Tx) error {
	b := tx.Bucket(bucketScramBoot)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var key ScramKey
		if err := json.Unmarshal(v, &key); err != nil {
			return fmt.Errorf("decode SCRAM bootstrap marker %q: %w", k, err)
		}
		if f.scramBoot == nil {
			f.scramBoot = map[ScramKey]bool{}
		}
		f.scramBoot[key] = true
		return nil
	})
}

// manifestScramBoot lists the markers for a snapshot.
func (f *fsm) manifestScramBoot() []ScramKey {
	out := make([]ScramKey, 0, len(f.scramBoot))
	for k := range f.scramBoot {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ScramKey) int {
		if c := cmp.Compare(a.User, b.User); c != 0 {
			return c
		}
		return cmp.Compare(a.Mechanism, b.Mechanism)
	})
	return out
}

// writeManifestScramBoot stores a snapshot's markers.
func writeManifestScramBoot(tx *bolt.Tx, m *manifest) error {
	b, err := freshBucket(tx, bucketScramBoot)
	if err != nil {
		return err
	}
	for _, k := range m.ScramBootstrapped {
		if err := putJSON(b, k.storeKey(), k); err != nil {
			return err
		}
	}
	return nil
}

// validateScramBoot checks a manifest's markers: valid names, at most
// MaxScramCredentials of them.
func validateScramBoot(keys []ScramKey) error {
	if len(keys) > MaxScramCredentials {
		return fmt.Errorf("%w: %d SCRAM bootstrap markers (at most %d)", errBadSnapshot, len(keys), MaxScramCredentials)
	}
	for _, k := range keys {
		if err := checkScramName(k.User, k.Mechanism); err != nil {
			return fmt.Errorf("%w: SCRAM bootstrap marker: %w", errBadSnapshot, err)
		}
	}
	return nil
}
