package raftstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Membership records are stored in order, survive a crash (raft replay)
// and a clean restart (the checkpoint), and a nil record deletes.
func TestGroupMembersRecords(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.StoreGroupMembers(ctx, s.LeaderEpoch(), []GroupMembers{
		{Group: "a", Data: []byte("a1")},
		{Group: "b", Data: []byte("b1")},
		{Group: "a", Data: []byte("a2")}, // a later record of a group wins
	}); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for g, d := range s.GroupMembersRecords() {
			got[g] = string(d)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: records %v, want %v", when, got, want)
		}
		for g, d := range want {
			if got[g] != d {
				t.Fatalf("%s: records %v, want %v", when, got, want)
			}
		}
	}
	check("stored", map[string]string{"a": "a2", "b": "b1"})
	s.crashForTest()
	s = openTestStore(t, dir)
	check("after a crash", map[string]string{"a": "a2", "b": "b1"})
	if err := s.StoreGroupMembers(ctx, s.LeaderEpoch(), []GroupMembers{{Group: "b"}}); err != nil {
		t.Fatal(err)
	}
	check("deleted", map[string]string{"a": "a2"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	check("after a restart", map[string]string{"a": "a2"})

	for _, bad := range [][]GroupMembers{
		{{Group: "", Data: []byte("x")}},
		{{Group: strings.Repeat("g", MaxIDBytes+1), Data: []byte("x")}},
		{{Group: "c", Data: []byte("x")}, {Group: "d", Data: make([]byte, MaxGroupMembersBytes+1)}},
	} {
		if err := s.StoreGroupMembers(ctx, s.LeaderEpoch(), bad); err == nil {
			t.Fatalf("stored an invalid record set (%d records)", len(bad))
		}
		// The FSM refuses them too, whatever a proposer sends.
		c := groupMembersCmd{Records: bad}
		if err := s.fsm.applyGroupMembers(&c, s.LeaderEpoch()); !errors.Is(err, ErrInvalidGroupID) && !errors.Is(err, ErrInvalidCommand) {
			t.Fatalf("apply of an invalid record set: %v", err)
		}
	}
	check("after invalid records", map[string]string{"a": "a2"})

	// Records of another leadership's coordinator are refused.
	if err := s.StoreGroupMembers(ctx, s.LeaderEpoch()-1, []GroupMembers{{Group: "a", Data: []byte("stale")}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("records of an older term: %v", err)
	}
	check("after stale records", map[string]string{"a": "a2"})
	// DeleteGroups deletes the record with the offsets.
	if err := s.DeleteOffsets(ctx, "a", nil, true); err != nil {
		t.Fatal(err)
	}
	check("after DeleteGroups", map[string]string{})
}
