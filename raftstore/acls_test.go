package raftstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/raftstore/acl"
)

func testBinding(name string, pt acl.PatternType, principal string, op acl.Operation, perm acl.Permission) acl.Binding {
	return acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func strp(s string) *string { return &s }

func TestACLsApplyAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	bad := testBinding("x", acl.PatternMatch, "User:bob", acl.OpRead, acl.PermAllow)
	errs, err := s.CreateACLs(ctx, []acl.Binding{
		testBinding("orders", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow),
		testBinding("ord", acl.PatternPrefixed, "User:bob", acl.OpWrite, acl.PermAllow),
		testBinding("*", acl.PatternLiteral, "User:eve", acl.OpAll, acl.PermDeny),
		testBinding("other", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow),
		bad,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs[:4] {
		if e != nil {
			t.Fatalf("binding %d: %v", i, e)
		}
	}
	if !errors.Is(errs[4], acl.ErrInvalid) {
		t.Fatalf("invalid binding: %v", errs[4])
	}
	if n := s.ACLs().Len(); n != 4 {
		t.Fatalf("%d ACLs, want 4", n)
	}
	// Created again: no change.
	if _, err := s.CreateACLs(ctx, []acl.Binding{testBinding("orders", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow)}); err != nil || s.ACLs().Len() != 4 {
		t.Fatalf("re-create: %v, %d ACLs", err, s.ACLs().Len())
	}
	// A Match filter on "orders" deletes the literal, the prefix and the
	// wildcard, not "other"; an invalid filter is answered alone.
	res, err := s.DeleteACLs(ctx, []acl.Filter{
		{ResourceType: acl.ResourceTopic, ResourceName: strp("orders"), PatternType: acl.PatternMatch, Operation: acl.OpAny, Permission: acl.PermAny},
		{ResourceType: acl.ResourceUnknown, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted[0]) != 3 || res.Errs[0] != nil || !errors.Is(res.Errs[1], acl.ErrInvalid) {
		t.Fatalf("delete: %+v", res)
	}
	p := &acl.Policy{}
	bob := acl.Request{Principal: "User:bob", Host: "1.2.3.4"}
	if s.ACLs().Authorize(p, bob, acl.OpRead, acl.ResourceTopic, "orders") || !s.ACLs().Authorize(p, bob, acl.OpRead, acl.ResourceTopic, "other") {
		t.Fatal("authorization after delete is wrong")
	}
	// Replayed from raft's log after a crash before any checkpoint.
	s.crashForTest()
	s = openTestStore(t, dir)
	if n := s.ACLs().Len(); n != 1 {
		t.Fatalf("after crash: %d ACLs, want 1", n)
	}
	if _, err := s.CreateACLs(ctx, []acl.Binding{testBinding("later", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow)}); err != nil {
		t.Fatal(err)
	}
	// From the checkpoint a clean close writes.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	got := s.ACLs().Bindings(acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny})
	if len(got) != 2 {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestACLsReplicate(t *testing.T) {
	c := newTestCluster(t, nil)
	ld := c.leader()
	ctx := context.Background()
	if _, err := ld.CreateACLs(ctx, []acl.Binding{testBinding("t", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, s := range c.nodes {
		for s.ACLs().Len() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d has %d ACLs", i+1, s.ACLs().Len())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestACLsManifestRoundTrip(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	if _, err := s.CreateACLs(context.Background(), []acl.Binding{testBinding("t", acl.PatternPrefixed, "User:bob", acl.OpRead, acl.PermAllow)}); err != nil {
		t.Fatal(err)
	}
	stream, _ := streamSnapshot(t, s)
	raw, err := readSnapManifest(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ACLs) != 1 || got.ACLs[0].ResourceName != "t" {
		t.Fatalf("snapshot ACLs: %+v", got.ACLs)
	}
	m := manifest{ACLs: got.ACLs}
	m.ACLs = append(m.ACLs, m.ACLs[0])
	if m.validateACLs() == nil {
		t.Fatal("a repeated ACL validated")
	}
	m.ACLs = []acl.Binding{{ResourceType: acl.ResourceAny}}
	if m.validateACLs() == nil {
		t.Fatal("an invalid ACL validated")
	}
}

// FuzzACLCommands applies arbitrary create and delete commands to an
// FSM: it never panics, and what it holds stays valid and bounded.
func FuzzACLCommands(f *testing.F) {
	create, _ := json.Marshal(createACLsCmd{Bindings: []acl.Binding{testBinding("t", acl.PatternLiteral, "User:a", acl.OpRead, acl.PermAllow)}})
	del, _ := json.Marshal(deleteACLsCmd{Filters: []acl.Filter{{ResourceType: acl.ResourceAny, ResourceName: strp("t"), PatternType: acl.PatternMatch, Operation: acl.OpAny, Permission: acl.PermAny}}})
	f.Add(byte(cmdCreateACLs), create, byte(cmdDeleteACLs), del)
	f.Add(byte(cmdDeleteACLs), []byte(`{"filters":[{"rt":1,"pt":1,"op":1,"perm":1}]}`), byte(cmdCreateACLs), []byte(`{"bindings":[{"rt":4,"rn":"kafka-cluster","pt":3,"p":"User:x","h":"*","op":2,"perm":3}]}`))
	f.Add(byte(cmdCreateACLs), []byte(`{"bindings":[{"rt":-1,"pt":127}]}`), byte(0), []byte{})
	f.Fuzz(func(t *testing.T, t1 byte, d1 []byte, t2 byte, d2 []byte) {
		fs := &fsm{logger: testLogger()}
		fs.dirty.reset()
		for i, c := range []struct {
			typ  byte
			data []byte
		}{{t1, d1}, {t2, d2}} {
			typ := cmdCreateACLs
			if c.typ%2 == 1 {
				typ = cmdDeleteACLs
			}
			fs.applyCommand(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: append([]byte{byte(typ)}, c.data...)})
		}
		x := fs.acls.index.Load()
		if x.Len() > acl.MaxBindings || x.Len() != len(fs.acls.byKey) {
			t.Fatalf("index of %d, table of %d", x.Len(), len(fs.acls.byKey))
		}
		size := 0
		for _, b := range x.All() {
			if err := b.Validate(); err != nil {
				t.Fatalf("held an invalid binding: %v", err)
			}
			size += b.Size()
		}
		if int64(size) != fs.acls.size.Load() || size > acl.MaxStateBytes {
			t.Fatalf("bindings of %d bytes, counted %d", size, fs.acls.size.Load())
		}
	})
}
