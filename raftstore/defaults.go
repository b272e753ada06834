package raftstore

import (
	"context"
	"fmt"
	"maps"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/topic"
)

// Broker-level topic defaults (log.retention.ms, log.segment.bytes, ...)
// decide what apply does: when a segment rolls and which data retention
// deletes. A node's own config must therefore never be read inside apply,
// or two nodes with different settings would keep different data. The
// defaults are replicated instead, and every replica applies them to every
// partition in the same entry.
//
// Who sets them: a one-node cluster's leader, from its config, whenever it
// differs (so editing server.properties and restarting works as users
// expect); in a larger cluster, the first leader that finds the cluster's
// defaults empty. After that a node whose settings differ only warns: a
// node that happens to win an election with a shorter log.retention.ms
// must not delete data on every replica.

// setTopicDefaultsCmd replaces the cluster's topic defaults.
type setTopicDefaultsCmd struct {
	Defaults topic.Defaults `json:"defaults"`
}

func (f *fsm) applySetTopicDefaults(c *setTopicDefaultsCmd) error {
	if err := c.Defaults.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCommand, err)
	}
	f.mu.Lock()
	f.defaults = maps.Clone(c.Defaults)
	if f.defaults == nil {
		f.defaults = topic.Defaults{}
	}
	var all []*topicState
	for _, ts := range f.topics {
		all = append(all, ts)
	}
	f.mu.Unlock()
	for _, ts := range all {
		cfg := f.logConfig(ts.meta.Configs)
		for _, p := range ts.parts {
			p.log.SetConfig(cfg)
		}
	}
	f.dirty.meta = true
	return nil
}

// syncDefaults proposes this node's configured topic defaults if they
// differ from the cluster's. Only a leader can; a follower whose settings
// differ says so.
func (s *Store) syncDefaults(ctx context.Context) error {
	local := s.cfg.Defaults
	if local == nil {
		local = topic.Defaults{}
	}
	if maps.Equal(local, s.Defaults()) {
		return nil
	}
	if !s.IsLeader() || len(s.Defaults()) > 0 && s.voters() > 1 {
		s.logger.Warn("this node's topic defaults (log.* settings) differ from the cluster's, which apply", "local", local, "cluster", s.Defaults())
		return nil
	}
	if err := s.proposeJSON(ctx, cmdSetTopicDefaults, setTopicDefaultsCmd{Defaults: local}); err != nil {
		return fmt.Errorf("replicate topic defaults: %w", err)
	}
	s.logger.Info("replicated this node's topic defaults to the cluster", "defaults", local)
	return nil
}

// voters counts the voters in raft's current configuration.
func (s *Store) voters() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
