package raftstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// Topics returns every topic, sorted by name.
func (s *Store) Topics() []topic.Topic {
	s.fsm.mu.RLock()
	out := make([]topic.Topic, 0, len(s.fsm.topics))
	for _, ts := range s.fsm.topics {
		t := ts.meta
		t.Configs = maps.Clone(t.Configs)
		out = append(out, t)
	}
	s.fsm.mu.RUnlock()
	slices.SortFunc(out, func(a, b topic.Topic) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// TopicNameByID is the name of the topic with this ID.
func (s *Store) TopicNameByID(id [16]byte) (string, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	name, ok := s.fsm.topicIDs[id]
	return name, ok
}

// Topic returns one topic.
func (s *Store) Topic(name string) (topic.Topic, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	ts, ok := s.fsm.topics[name]
	if !ok {
		return topic.Topic{}, false
	}
	t := ts.meta
	t.Configs = maps.Clone(t.Configs)
	return t, true
}

// Log returns a partition's log for reading. Everything below its
// EndOffset is committed and applied.
func (s *Store) Log(name string, partition int32) (*log.Log, bool) {
	p := s.fsm.partition(name, partition)
	if p == nil {
		return nil, false
	}
	return p.log, true
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for one partition.
func (s *Store) EndOffsetForEpoch(name string, partition, epoch int32) (int32, int64, bool) {
	p := s.fsm.partition(name, partition)
	if p == nil {
		return 0, 0, false
	}
	// epochs is only appended to by the apply goroutine; take the read
	// lock so a concurrent append's slice header is read whole.
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	e, off := p.endOffsetForEpoch(epoch)
	return e, off, true
}

// Changed returns a channel closed after the next batch of applied entries:
// long-polling fetches wait on it.
func (s *Store) Changed() <-chan struct{} { return s.fsm.changed() }

// Brokers returns every registered broker, sorted by node id.
func (s *Store) Brokers() []BrokerInfo {
	s.fsm.mu.RLock()
	out := slices.Collect(maps.Values(s.fsm.brokers))
	s.fsm.mu.RUnlock()
	slices.SortFunc(out, func(a, b BrokerInfo) int { return int(a.NodeID) - int(b.NodeID) })
	return out
}

// NodeID is this node's id.
func (s *Store) NodeID() int32 { return s.cfg.NodeID }

// IsLeader reports whether this node leads the raft group.
//
// A new leader is not yet the leader for serving: it first confirms with a
// raft barrier that it has applied everything committed before its term
// (confirmLeadership), so that the high watermark it serves never goes
// backwards and no consumer sees OFFSET_OUT_OF_RANGE after a failover.
func (s *Store) IsLeader() bool {
	if s.raft.State() != raft.Leader {
		return false
	}
	return s.readyTerm.Load() == s.raft.CurrentTerm()
}

// confirmLeadership runs a raft barrier and, if this node still leads in
// the same term, marks it ready to serve (IsLeader).
func (s *Store) confirmLeadership() error {
	term := s.raft.CurrentTerm()
	if err := s.await(context.Background(), s.raft.Barrier(s.cfg.ApplyTimeout)); err != nil {
		return fmt.Errorf("leader barrier: %w", err)
	}
	if s.raft.State() == raft.Leader && s.raft.CurrentTerm() == term {
		s.readyTerm.Store(term)
	}
	return nil
}

// Leader returns the leader's node id, if one is known.
func (s *Store) Leader() (int32, bool) {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return -1, false
	}
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return -1, false
	}
	return int32(n), true
}

// PartitionLeader is the one place that maps a partition to the node that
// leads it. Today one raft group holds every partition, so it is the raft
// leader; several groups would change only this function.
func (s *Store) PartitionLeader(name string, partition int32) (int32, bool) {
	return s.Leader()
}

// LeaderEpoch is the current leader epoch, the raft term.
func (s *Store) LeaderEpoch() int32 {
	return int32(s.raft.CurrentTerm())
}

// WaitLeader blocks until a leader is known and this node has applied every
// entry committed before it asked (so reads are current).
func (s *Store) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if _, ok := s.Leader(); ok {
			if s.raft.State() != raft.Leader || s.confirmLeadership() == nil {
				// A leader serves with its configured topic defaults
				// from the first request on.
				return s.syncDefaults(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for raft leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// AppliedIndex is the last raft index applied to the FSM.
func (s *Store) AppliedIndex() uint64 { return s.fsm.appliedIndex.Load() }

// Stats exposes raft's own statistics (state, term, commit_index, ...).
func (s *Store) Stats() map[string]string { return s.raft.Stats() }

// Self is this node's Kafka identity as configured.
func (s *Store) Self() BrokerInfo { return s.cfg.Broker }

// Defaults are the broker-level topic config defaults.
func (s *Store) Defaults() topic.Defaults {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return maps.Clone(s.fsm.defaults)
}

// Serving reports whether this node may serve reads as a follower: it is a
// member that knows a leader and has applied entries of the current term's
// cluster (a node that lost touch with its leader stops serving once its
// election timeout notices).
func (s *Store) Serving() bool {
	if s.raft.State() != raft.Follower {
		return s.IsLeader()
	}
	_, ok := s.Leader()
	return ok
}
