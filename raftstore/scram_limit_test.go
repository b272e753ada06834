package raftstore

import (
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
