package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRemoveLeaderItself: a leader that removes itself steps down before it
// could unregister its Kafka identity; the next leader does it, and the
// removed node is never again in sync (so never a preferred read replica).
// Only members may register.
func TestRemoveLeaderItself(t *testing.T) {
	c := newTestCluster(t, nil)
	ctx := context.Background()
	l := c.leader()
	gone := l.cfg.NodeID
	// The new leader registers itself just after its barrier.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := l.Registered(gone); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader did not register itself")
		}
	}
	if err := l.RegisterBroker(ctx, BrokerInfo{NodeID: 9, Host: "127.0.0.1", Port: 9099}); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("a non-member registered: %v", err)
	}
	if err := l.RemoveMember(ctx, gone); err != nil {
		t.Fatalf("the leader removing itself: %v", err)
	}
	var n *Store
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n = nil
		for _, s := range c.nodes {
			if s.cfg.NodeID != gone && s.IsLeader() {
				n = s
			}
		}
		if n != nil {
			if _, ok := n.Registered(gone); !ok {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n == nil {
		t.Fatal("no new leader")
	}
	if _, ok := n.Registered(gone); ok {
		t.Fatalf("node %d is still registered after its removal", gone)
	}
	now := time.Now()
	if n.InSync(gone, DefaultReplicaLag, now) {
		t.Fatalf("the removed node %d is reported in sync", gone)
	}
	for _, s := range c.nodes {
		if s.cfg.NodeID != gone && s != n && s.InSync(gone, DefaultReplicaLag, now) {
			t.Fatalf("follower %d reports the removed node in sync", s.cfg.NodeID)
		}
	}
	if n.InSync(99, DefaultReplicaLag, now) {
		t.Fatal("an unknown node is reported in sync")
	}
	if !n.InSync(n.cfg.NodeID, DefaultReplicaLag, now) {
		t.Fatal("the leader is not in sync with itself")
	}
}

// A node id's registration is bound, in apply, to the first principal that
// made one: another principal is refused on every replica alike, and one
// without a principal (the authorizer off) keeps the binding.
func TestRegistrationBoundInApply(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	reg := func(principal, host string) error {
		return s.RegisterBroker(ctx, BrokerInfo{NodeID: 1, Host: host, Port: 9092, Principal: principal})
	}
	if err := reg("User:node1", "a"); err != nil {
		t.Fatal(err)
	}
	if err := reg("User:eve", "evil"); !errors.Is(err, ErrForeignRegistration) {
		t.Fatalf("another principal's registration: %v", err)
	}
	if b, _ := s.Registered(1); b.Host != "a" {
		t.Fatalf("registration after a refused one: %+v", b)
	}
	if err := reg("", "b"); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Registered(1); b.Host != "b" || b.Principal != "User:node1" {
		t.Fatalf("registration without a principal: %+v", b)
	}
	if err := reg("User:node1", "c"); err != nil {
		t.Fatalf("the bound principal again: %v", err)
	}
}
