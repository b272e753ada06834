package raftstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/topic"
)

// OffsetCommit is one committed consumer-group offset.
type OffsetCommit struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
	// CommitTime is the leader's clock when the commit was proposed.
	CommitTime int64 `json:"commit_time"`
}

type offsetCommitCmd struct {
	Now     int64          `json:"now"`
	Group   string         `json:"group"`
	Offsets []OffsetCommit `json:"offsets"`
}

type offsetDeleteCmd struct {
	Group string `json:"group"`
	// Partitions lists "topic/partition" keys; empty with All deletes
	// every offset of the group (DeleteGroups).
	Partitions []TopicPartition `json:"partitions,omitempty"`
	All        bool             `json:"all,omitempty"`
}

type expireOffsetsCmd struct {
	Now         int64    `json:"now"`
	RetentionMs int64    `json:"retention_ms"`
	Groups      []string `json:"groups"`
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// groupOffsets holds one group's committed offsets, keyed by partKey.
type groupOffsets map[string]OffsetCommit

func offsetKey(group, topic string, partition int32) string {
	return group + "\x00" + topic + "\x00" + strconv.Itoa(int(partition))
}

func splitOffsetKey(k string) (group, rest string) {
	g, r, _ := strings.Cut(k, "\x00")
	return g, r
}

// offsetTarget reports whether a group may commit an offset for a
// partition: one of a topic's, or of Kafka's internal topics, which clients
// see in Metadata (and which monitoring tools consume in groups) although
// brokerd keeps no log for them.
func (f *fsm) offsetTarget(name string, partition int32) bool {
	return f.partition(name, partition) != nil || topic.IsInternalPartition(name, partition)
}

func (f *fsm) applyOffsetCommit(c *offsetCommitCmd) []error {
	out := make([]error, len(c.Offsets))
	if len(c.Group) > MaxIDBytes {
		for i := range out {
			out[i] = ErrInvalidGroupID
		}
		return out
	}
	for i, o := range c.Offsets {
		if !f.offsetTarget(o.Topic, o.Partition) {
			out[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, o.Topic, o.Partition)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[c.Group]
	for i, o := range c.Offsets {
		if out[i] != nil {
			continue
		}
		if g == nil {
			g = groupOffsets{}
			f.groups[c.Group] = g
		}
		o.CommitTime = c.Now
		k := partKey(o.Topic, o.Partition)
		g[k] = o
		f.dirty.offsets[offsetKey(c.Group, o.Topic, o.Partition)] = true
	}
	return out
}

func (f *fsm) applyOffsetDelete(c *offsetDeleteCmd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.All {
		// DeleteGroups: the group's membership record goes in the same
		// step as its offsets.
		if _, ok := f.members[c.Group]; ok {
			delete(f.members, c.Group)
			f.dirty.members[c.Group] = true
		}
	}
	g := f.groups[c.Group]
	if g == nil {
		return
	}
	for k, o := range g {
		if c.All || slices.Contains(c.Partitions, TopicPartition{o.Topic, o.Partition}) {
			delete(g, k)
			f.dirty.offsets[offsetKey(c.Group, o.Topic, o.Partition)] = true
		}
	}
	if len(g) == 0 {
		delete(f.groups, c.Group)
	}
}

func (f *fsm) applyExpireOffsets(c *expireOffsetsCmd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range c.Groups {
		g := f.groups[name]
		for k, o := range g {
			if o.CommitTime+c.RetentionMs < c.Now {
				delete(g, k)
				f.dirty.offsets[offsetKey(name, o.Topic, o.Partition)] = true
			}
		}
		if g != nil && len(g) == 0 {
			delete(f.groups, name)
		}
	}
}

// CommitOffsets stores a group's offsets through raft. It returns one error
// (or nil) per offset.
func (s *Store) CommitOffsets(ctx context.Context, now int64, group string, offsets []OffsetCommit) ([]error, error) {
	if len(group) > MaxIDBytes {
		return nil, ErrInvalidGroupID
	}
	return proposeFor[[]error](ctx, s, cmdOffsetCommit, offsetCommitCmd{Now: now, Group: group, Offsets: offsets})
}

// DeleteOffsets removes some of a group's offsets (OffsetDelete), or all of
// them when all is set (DeleteGroups).
func (s *Store) DeleteOffsets(ctx context.Context, group string, parts []TopicPartition, all bool) error {
	return s.proposeJSON(ctx, cmdOffsetDelete, offsetDeleteCmd{Group: group, Partitions: parts, All: all})
}

// ExpireOffsets drops offsets older than retentionMs from the named groups,
// which the coordinator has found empty (offsets.retention.minutes).
func (s *Store) ExpireOffsets(ctx context.Context, now, retentionMs int64, groups []string) error {
	return s.proposeJSON(ctx, cmdExpireOffsets, expireOffsetsCmd{Now: now, RetentionMs: retentionMs, Groups: groups})
}

// GroupOffsets returns a copy of a group's committed offsets.
func (s *Store) GroupOffsets(group string) []OffsetCommit {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	g := s.fsm.groups[group]
	out := slices.Collect(maps.Values(g))
	slices.SortFunc(out, func(a, b OffsetCommit) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

// GroupOffset returns one committed offset.
func (s *Store) GroupOffset(group, topic string, partition int32) (OffsetCommit, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	o, ok := s.fsm.groups[group][partKey(topic, partition)]
	return o, ok
}

// OffsetGroups lists the groups that have committed offsets.
func (s *Store) OffsetGroups() []string {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.fsm.groups))
}
