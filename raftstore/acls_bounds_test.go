package raftstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestACLCommandBounds: an ACL command over acl.MaxCommandBytes is
// refused by the proposer and, proposed anyway, by apply; a binding with
// invalid UTF-8 is refused (JSON would keep another one).
func TestACLCommandBounds(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	var big []acl.Binding
	for i := range 100 {
		big = append(big, testBinding(strings.Repeat("x", 15<<10)+string(rune('a'+i%26))+strings.Repeat("y", i), acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow))
	}
	if _, err := s.CreateACLs(ctx, big); !errors.Is(err, acl.ErrTooLarge) {
		t.Fatalf("create of %d bindings of 15 KiB: %v, want ErrTooLarge", len(big), err)
	}
	data, err := encodeJSON(cmdCreateACLs, createACLsCmd{Bindings: big})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.propose(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := resp.(error); !errors.Is(err, acl.ErrTooLarge) {
		t.Fatalf("apply of a %d-byte create: %v, want ErrTooLarge", len(data), resp)
	}
	if n := s.ACLs().Len(); n != 0 {
		t.Fatalf("%d ACLs held", n)
	}
	errs, err := s.CreateACLs(ctx, []acl.Binding{testBinding("bad\xff", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow)})
	if err != nil || !errors.Is(errs[0], acl.ErrInvalid) {
		t.Fatalf("invalid UTF-8 name: %v %v", errs, err)
	}
}

// TestACLStateBound: a create that would take the ACLs past
// acl.MaxStateBytes is refused, in apply and on the proposer.
func TestACLStateBound(t *testing.T) {
	fs := &fsm{logger: testLogger()}
	fs.dirty.reset()
	b := testBinding("orders", acl.PatternLiteral, "User:bob", acl.OpRead, acl.PermAllow)
	fs.acls.size.Store(acl.MaxStateBytes - int64(b.Size()) + 1)
	data, err := encodeJSON(cmdCreateACLs, createACLsCmd{Bindings: []acl.Binding{b}})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := fs.applyCommand(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data}).(*CreateACLsResult)
	if !ok || !errors.Is(res.Errs[0], acl.ErrTooLarge) {
		t.Fatalf("create past the bound: %+v", res)
	}
	if err := aclRoom(fs.acls.size.Load(), []acl.Binding{b}); !errors.Is(err, acl.ErrTooLarge) {
		t.Fatalf("proposer: %v", err)
	}
}
