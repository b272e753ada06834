package raftstore

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func testScram(user, mech string, iters int32) ScramCredential {
	n := ScramKeySize(mech)
	if n == 0 {
		n = 32
	}
	return ScramCredential{User: user, Mechanism: mech, Salt: []byte("salt"), Iterations: iters,
		StoredKey: bytes.Repeat([]byte{1}, n), ServerKey: bytes.Repeat([]byte{2}, n)}
}

func newScramFSM() *fsm {
	f := &fsm{scram: map[ScramKey]ScramCredential{}}
	f.dirty.reset()
	return f
}

func TestApplyScramAlter(t *testing.T) {
	short := testScram("bob", ScramSHA256, 4096)
	short.StoredKey = short.StoredKey[:10]
	noSalt := testScram("bob", ScramSHA256, 4096)
	noSalt.Salt = nil
	cases := []struct {
		name    string
		pre     []ScramCredential
		cmd     scramAlterCmd
		want    []error
		present []ScramKey
		absent  []ScramKey
	}{
		{name: "upsert sha256", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("alice", ScramSHA256, 4096)}},
			want: []error{nil}, present: []ScramKey{{"alice", ScramSHA256}}},
		{name: "upsert sha512 max iterations", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("alice", ScramSHA512, 16384)}},
			want: []error{nil}, present: []ScramKey{{"alice", ScramSHA512}}},
		{name: "too few iterations", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("alice", ScramSHA256, 4095)}},
			want: []error{ErrUnacceptableCredential}, absent: []ScramKey{{"alice", ScramSHA256}}},
		{name: "too many iterations", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("alice", ScramSHA256, 16385)}},
			want: []error{ErrUnacceptableCredential}},
		{name: "empty name", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("", ScramSHA256, 4096)}},
			want: []error{ErrUnacceptableCredential}},
		{name: "long name", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram(strings.Repeat("x", MaxScramUserBytes+1), ScramSHA256, 4096)}},
			want: []error{ErrUnacceptableCredential}},
		{name: "unknown mechanism", cmd: scramAlterCmd{Upserts: []ScramCredential{testScram("alice", "SCRAM-SHA-1", 4096)}},
			want: []error{ErrUnsupportedScramMechanism}},
		{name: "short key", cmd: scramAlterCmd{Upserts: []ScramCredential{short}}, want: []error{ErrUnacceptableCredential}},
		{name: "no salt", cmd: scramAlterCmd{Upserts: []ScramCredential{noSalt}}, want: []error{ErrUnacceptableCredential}},
		{name: "delete missing", cmd: scramAlterCmd{Deletes: []ScramKey{{"alice", ScramSHA256}}}, want: []error{ErrUnknownScramCredential}},
		{name: "delete unknown mechanism", cmd: scramAlterCmd{Deletes: []ScramKey{{"alice", "MD5"}}}, want: []error{ErrUnsupportedScramMechanism}},
		{name: "delete one mechanism", pre: []ScramCredential{testScram("alice", ScramSHA256, 4096), testScram("alice", ScramSHA512, 4096)},
			cmd:  scramAlterCmd{Deletes: []ScramKey{{"alice", ScramSHA256}}},
			want: []error{nil}, present: []ScramKey{{"alice", ScramSHA512}}, absent: []ScramKey{{"alice", ScramSHA256}}},
		{name: "if absent keeps existing", pre: []ScramCredential{testScram("admin", ScramSHA256, 8192)},
			cmd:  scramAlterCmd{IfAbsent: true, Upserts: []ScramCredential{testScram("admin", ScramSHA256, 4096), testScram("bob", ScramSHA256, 4096)}},
			want: []error{ErrScramCredentialExists, nil}, present: []ScramKey{{"admin", ScramSHA256}, {"bob", ScramSHA256}}},
		{name: "overwrite", pre: []ScramCredential{testScram("admin", ScramSHA256, 8192)},
			cmd:  scramAlterCmd{Upserts: []ScramCredential{testScram("admin", ScramSHA256, 4096)}},
			want: []error{nil}, present: []ScramKey{{"admin", ScramSHA256}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newScramFSM()
			for _, c := range tc.pre {
				f.scram[c.key()] = c
			}
			res := f.applyScramAlter(&tc.cmd)
			errs, ok := res.([]error)
			if !ok {
				t.Fatalf("result %T %v", res, res)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d results, want %d", len(errs), len(tc.want))
			}
			for i := range errs {
				if !errors.Is(errs[i], tc.want[i]) || (tc.want[i] == nil) != (errs[i] == nil) {
					t.Errorf("result %d: got %v, want %v", i, errs[i], tc.want[i])
				}
			}
			for _, k := range tc.present {
				if _, ok := f.scram[k]; !ok {
					t.Errorf("%v missing", k)
				}
			}
			for _, k := range tc.absent {
				if _, ok := f.scram[k]; ok {
					t.Errorf("%v present", k)
				}
			}
			if tc.name == "if absent keeps existing" && f.scram[ScramKey{"admin", ScramSHA256}].Iterations != 8192 {
				t.Errorf("if-absent overwrote the existing credential")
			}
		})
	}
}

func TestApplyScramAlterTooMany(t *testing.T) {
	f := newScramFSM()
	c := scramAlterCmd{Deletes: make([]ScramKey, maxScramOpsPerAlter+1)}
	if err, ok := f.applyScramAlter(&c).(error); !ok || !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("got %v", err)
	}
}

// TestScramRestartAndSnapshot: credentials are checkpointed, recovered at
// restart, and carried by a snapshot manifest.
func TestScramRestartAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	errs, err := s.AlterScram(ctx, []ScramCredential{testScram("alice", ScramSHA256, 4096), testScram("bob", ScramSHA512, 8192)}, nil, false)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("alter: %v %v", err, errs)
	}
	if errs, err := s.AlterScram(ctx, nil, []ScramKey{{"bob", ScramSHA512}}, false); err != nil || errs[0] != nil {
		t.Fatalf("delete: %v %v", err, errs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	got := s.ScramCredentials()
	if len(got) != 1 || got[0].User != "alice" || got[0].Iterations != 4096 || !bytes.Equal(got[0].StoredKey, bytes.Repeat([]byte{1}, 32)) {
		t.Fatalf("after restart: %+v", got)
	}

	// A manifest carries them into a fresh state DB.
	m := realManifest(t, s)
	if len(m.Scram) != 1 {
		t.Fatalf("the snapshot's manifest holds %+v", m.Scram)
	}
	f := installedScram(t, m)
	if _, ok := f.scram[ScramKey{"alice", ScramSHA256}]; !ok || len(f.scram) != 1 {
		t.Fatalf("from manifest: %+v", f.scram)
	}
	bad := &manifest{Partitions: map[string]manifestPartition{}, Scram: []ScramCredential{testScram("x", ScramSHA256, 1)}}
	if err := bad.validate(); err == nil {
		t.Fatal("a manifest with a bad credential passed validation")
	}
}

type boltTx = bolt.Tx

func openBolt(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
