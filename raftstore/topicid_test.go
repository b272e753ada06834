package raftstore

import (
	"context"
	"testing"

	"github.com/brokerd/brokerd/topic"
)

// TestTopicNameByID: the index of topics by ID follows creates, deletes
// and a restart.
func TestTopicNameByID(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	a, b := topic.NewID(), topic.NewID()
	for name, id := range map[string][16]byte{"a": a, "b": b} {
		if err := s.CreateTopic(ctx, name, id, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteTopic(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if name, ok := s.TopicNameByID(a); !ok || name != "a" {
			t.Errorf("%s: id of a names %q, %v", when, name, ok)
		}
		if name, ok := s.TopicNameByID(b); ok {
			t.Errorf("%s: id of deleted b names %q", when, name)
		}
	}
	check("before restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	check("after restart")
}
