package raftstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestApplyScramLimits: apply refuses an upsert past MaxScramCredentials
// or MaxScramStateBytes, still replaces and deletes, and the credentials
// it holds at the bounds encode to no more than MaxScramStateBytes of
// manifest JSON. It failed when the credentials had no total bound.
func TestApplyScramLimits(t *testing.T) {
	f := newScramFSM()
	var ups []ScramCredential
	for i := range MaxScramCredentials {
		ups = append(ups, testScram(fmt.Sprintf("u%d", i), ScramSHA256, 4096))
		if len(ups) == maxScramOpsPerAlter {
			applyAllOK(t, f, ups)
			ups = nil
		}
	}
	applyAllOK(t, f, ups)
	one := testScram("extra", ScramSHA256, 4096)
	if errs := f.applyScramAlter(&scramAlterCmd{Upserts: []ScramCredential{one}}).([]error); !errors.Is(errs[0], ErrScramLimit) {
		t.Fatalf("credential %d: %v", MaxScramCredentials+1, errs[0])
	}
	// A replacement and a deletion still go through.
	applyAllOK(t, f, []ScramCredential{testScram("u0", ScramSHA256, 8192)})
	if errs := f.applyScramAlter(&scramAlterCmd{Deletes: []ScramKey{{"u1", ScramSHA256}}}).([]error); errs[0] != nil {
		t.Fatal(errs[0])
	}
	applyAllOK(t, f, []ScramCredential{one})

	// Large credentials: the byte bound, and the JSON stays within it.
	f = newScramFSM()
	var n int
	for {
		c := testScram(fmt.Sprintf("%04d", n)+strings.Repeat("\x01", MaxScramUserBytes-4), ScramSHA512, 4096)
		c.StoredKey, c.ServerKey = make([]byte, 64), make([]byte, 64)
		c.Salt = make([]byte, MaxScramSaltBytes)
		errs := f.applyScramAlter(&scramAlterCmd{Upserts: []ScramCredential{c}}).([]error)
		if errs[0] != nil {
			if !errors.Is(errs[0], ErrScramLimit) {
				t.Fatal(errs[0])
			}
			break
		}
		n++
	}
	m := &manifest{Scram: f.manifestScram()}
	b, err := json.Marshal(m.Scram)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxScramStateBytes || len(b) < MaxScramStateBytes/2 {
		t.Fatalf("%d credentials encode to %d bytes (bound %d)", n, len(b), MaxScramStateBytes)
	}
	if err := validateScramUsage(append(m.Scram, m.Scram[0])); err == nil {
		t.Fatal("a manifest past the byte bound passed")
	}
}

func applyAllOK(t *testing.T, f *fsm, ups []ScramCredential) {
	t.Helper()
	for i, err := range f.applyScramAlter(&scramAlterCmd{Upserts: ups}).([]error) {
		if err != nil {
			t.Fatalf("upsert %d: %v", i, err)
		}
	}
}

// TestScramBootstrapOnce: a bootstrap creates a credential and marks it;
// after a deletion, or a restart, or through the real snapshot's
// manifest, a second bootstrap leaves it deleted. It failed when
// bootstrap was a plain if-absent upsert (the deleted user came back).
func TestScramBootstrapOnce(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	alice, bob := testScram("alice", ScramSHA256, 4096), testScram("bob", ScramSHA256, 4096)
	if _, err := s.AlterScram(ctx, []ScramCredential{bob}, nil, false); err != nil {
		t.Fatal(err)
	}
	errs, err := s.BootstrapScram(ctx, []ScramCredential{alice, bob})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrScramCredentialExists) {
		t.Fatalf("bootstrap: %v %v", err, errs)
	}
	if !s.ScramBootstrapped("alice", ScramSHA256) || !s.ScramBootstrapped("bob", ScramSHA256) {
		t.Fatal("not marked")
	}
	if errs, err := s.AlterScram(ctx, nil, []ScramKey{{"alice", ScramSHA256}, {"bob", ScramSHA256}}, false); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("delete: %v %v", err, errs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	errs, err = s.BootstrapScram(ctx, []ScramCredential{alice, bob})
	if err != nil || !errors.Is(errs[0], ErrScramBootstrapped) || !errors.Is(errs[1], ErrScramBootstrapped) {
		t.Fatalf("second bootstrap after restart: %v %v", err, errs)
	}
	if len(s.ScramCredentials()) != 0 {
		t.Fatalf("deleted bootstrap users came back: %+v", s.ScramCredentials())
	}
	// The snapshot's manifest carries the markers.
	m := realManifest(t, s)
	if len(m.ScramBootstrapped) != 2 {
		t.Fatalf("manifest markers: %+v", m.ScramBootstrapped)
	}
	f := installedScram(t, m)
	errs = f.applyScramAlter(&scramAlterCmd{Upserts: []ScramCredential{alice}, IfAbsent: true, Bootstrap: true}).([]error)
	if !errors.Is(errs[0], ErrScramBootstrapped) {
		t.Fatalf("bootstrap on a node installed from the snapshot: %v", errs[0])
	}
}

// realManifest is the manifest of the store's own Snapshot.
func realManifest(t *testing.T, s *Store) *manifest {
	t.Helper()
	snap, err := s.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var m manifest
	if err := json.Unmarshal([]byte(snap.(manifestSnapshot)), &m); err != nil {
		t.Fatal(err)
	}
	if err := m.validate(); err != nil {
		t.Fatal(err)
	}
	return &m
}

// installedScram is a fresh FSM's SCRAM state after installing m's.
func installedScram(t *testing.T, m *manifest) *fsm {
	t.Helper()
	f := newScramFSM()
	db := openBolt(t)
	if err := db.Update(func(tx *boltTx) error { return writeManifestScram(tx, m) }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(f.loadScram); err != nil {
		t.Fatal(err)
	}
	return f
}
