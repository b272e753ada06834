package raftstore

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/brokerd/brokerd/topic"
)

func openWithDefaults(t *testing.T, dir string, d topic.Defaults) *Store {
	t.Helper()
	return openTuned(t, dir, func(c *Config) { c.Defaults = d })
}

// TestTopicDefaultsReplicated: the segment and retention settings apply
// resolves come from replicated state that the leader sets from its
// config, never from the applying node's own config. A restart with new
// settings re-replicates them and every existing partition follows.
func TestTopicDefaultsReplicated(t *testing.T) {
	dir := t.TempDir()
	s := openWithDefaults(t, dir, topic.Defaults{"segment.bytes": "1048576", "retention.ms": "60000"})
	if got := s.Defaults(); got["segment.bytes"] != "1048576" || got["retention.ms"] != "60000" {
		t.Fatalf("cluster defaults after start: %v", got)
	}
	if err := s.CreateTopic(context.Background(), "d", topic.NewID(), 2, map[string]string{"retention.ms": "5000"}); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Log("d", 1)
	if c := l.Config(); c.SegmentBytes != 1048576 || c.RetentionMs != 5000 {
		t.Fatalf("partition config %+v", c)
	}
	// The apply path must not read the local config: change it under the
	// running store and create another topic.
	s.cfg.Defaults = topic.Defaults{"segment.bytes": "2097152"}
	if err := s.CreateTopic(context.Background(), "e", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Log("e", 0); l.Config().SegmentBytes != 1048576 {
		t.Fatalf("apply read the local config: segment.bytes %d", l.Config().SegmentBytes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openWithDefaults(t, dir, topic.Defaults{"segment.bytes": "2097152"})
	defer s.Close()
	if got := s.Defaults(); len(got) != 1 || got["segment.bytes"] != "2097152" {
		t.Fatalf("cluster defaults after a restart with new settings: %v", got)
	}
	for _, tc := range []struct {
		topic     string
		retention int64
	}{{"d", 5000}, {"e", 7 * 24 * 3600 * 1000}} {
		l, _ := s.Log(tc.topic, 0)
		if c := l.Config(); c.SegmentBytes != 2097152 || c.RetentionMs != tc.retention {
			t.Fatalf("%s after the defaults changed: %+v", tc.topic, c)
		}
	}
}

// TestTopicDefaultsCluster: in a cluster, the first leader sets the
// cluster's defaults; a later leader with other settings does not replace
// them (it would make retention delete data on every replica).
func TestTopicDefaultsCluster(t *testing.T) {
	first := topic.Defaults{"retention.ms": "86400000"}
	c := newTestCluster(t, func(cfg *Config) {
		if cfg.NodeID == 1 {
			cfg.Defaults = first
		} else {
			cfg.Defaults = topic.Defaults{"retention.ms": "1000"}
		}
	})
	ld := c.leader()
	deadline := time.Now().Add(10 * time.Second)
	for len(ld.Defaults()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	set := ld.Defaults()
	if len(set) == 0 {
		t.Fatal("no cluster defaults set")
	}
	// Move leadership around: the defaults stay what the first leader set.
	for range 2 {
		if err := ld.TransferLeadership(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		ld = c.leader()
		_ = ld.syncDefaults(context.Background())
		if got := ld.Defaults(); !maps.Equal(got, set) {
			t.Fatalf("cluster defaults changed from %v to %v with a new leader", set, got)
		}
	}
}
