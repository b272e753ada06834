package raftstore

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// maxPartitions bounds one topic's partition count so that a single request
// cannot make the FSM open an unbounded number of files.
const maxPartitions = 10000

func (f *fsm) logConfig(overrides map[string]string) log.Config {
	r := topic.Resolve(overrides, f.defaults)
	return log.Config{
		SegmentBytes:       r.Int64("segment.bytes"),
		SegmentMs:          r.Int64("segment.ms"),
		RetentionMs:        r.Int64("retention.ms"),
		RetentionBytes:     r.Int64("retention.bytes"),
		IndexIntervalBytes: r.Int32("index.interval.bytes"),
		SegmentIndexBytes:  r.Int32("segment.index.bytes"),
	}
}

// openPartition opens (creating if needed) one partition's log directory.
func (f *fsm) openPartition(name string, idx int32, overrides map[string]string) (*partition, error) {
	dir := filepath.Join(f.dataDir, topic.PartitionDir(name, idx))
	l, err := log.Open(dir, f.logConfig(overrides), f.logger)
	if err != nil {
		return nil, fmt.Errorf("%w: open partition %s-%d: %w", ErrStorage, name, idx, err)
	}
	l.SetDamageHandler(f.onDamage)
	return &partition{topic: name, index: idx, log: l}, nil
}

// createPartition creates a new partition's log directory, waiting for
// space if the disk is full. A directory left by a replayed, not yet
// checkpointed create holds only data that raft will replay again: it
// starts empty.
func (f *fsm) createPartition(name string, idx int32, overrides map[string]string) (*partition, error) {
	var p *partition
	err := f.whileNoSpace(fmt.Sprintf("create partition %s-%d", name, idx), func() (err error) {
		if err := os.RemoveAll(filepath.Join(f.dataDir, topic.PartitionDir(name, idx))); err != nil {
			return fmt.Errorf("clear partition dir: %w", err)
		}
		p, err = f.openPartition(name, idx, overrides)
		return err
	})
	return p, err
}

// validateTopicCmd checks what every replica checks identically.
func validateTopicCmd(name string, partitions int32, configs map[string]string) error {
	if err := topic.ValidateName(name); err != nil {
		return err
	}
	if partitions <= 0 || partitions > maxPartitions {
		return fmt.Errorf("%w: %d (must be 1..%d)", ErrInvalidPartitions, partitions, maxPartitions)
	}
	return topic.ValidateConfigs(configs)
}

func (f *fsm) applyCreateTopic(c *createTopicCmd) error {
	if err := validateTopicCmd(c.Name, c.Partitions, c.Configs); err != nil {
		return err
	}
	f.mu.RLock()
	_, exists := f.topics[c.Name]
	f.mu.RUnlock()
	if exists {
		return fmt.Errorf("%w: %s", ErrTopicExists, c.Name)
	}
	ts := &topicState{meta: topic.Topic{Name: c.Name, ID: c.ID, Partitions: c.Partitions, Configs: maps.Clone(c.Configs)}}
	for i := int32(0); i < c.Partitions; i++ {
		p, err := f.createPartition(c.Name, i, c.Configs)
		if err != nil {
			closeParts(ts.parts)
			return f.fail(err)
		}
		ts.parts = append(ts.parts, p)
	}
	f.dataDirDirty = true
	f.mu.Lock()
	f.topics[c.Name] = ts
	f.topicIDs[c.ID] = c.Name
	// An explicit create ends the name's quarantine.
	delete(f.deleted, c.Name)
	f.mu.Unlock()
	f.dirty.topics[c.Name] = true
	for _, p := range ts.parts {
		f.dirty.parts[p.key()] = p
	}
	return nil
}

func closeParts(parts []*partition) {
	for _, p := range parts {
		_ = p.log.Close()
	}
}

func (f *fsm) applyDeleteTopic(c *deleteTopicCmd) error {
	f.mu.Lock()
	ts, ok := f.topics[c.Name]
	if ok {
		delete(f.topics, c.Name)
		delete(f.topicIDs, ts.meta.ID)
		f.quarantine(c.Name, c.Now)
		// As Kafka does, committed offsets go with the topic, so a topic
		// re-created under the same name starts with none.
		for group, g := range f.groups {
			for k, o := range g {
				if o.Topic == c.Name {
					delete(g, k)
					f.dirty.offsets[offsetKey(group, o.Topic, o.Partition)] = true
				}
			}
			if len(g) == 0 {
				delete(f.groups, group)
			}
		}
	}
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, c.Name)
	}
	f.procs.forgetTopic(c.Name)
	f.dirty.topics[c.Name] = true
	for _, p := range ts.parts {
		delete(f.dirty.parts, p.key())
		if err := f.buryPartition(p, f.current); err != nil {
			return f.fail(err)
		}
	}
	return nil
}

func (f *fsm) applyCreatePartitions(c *createPartitionsCmd) error {
	f.mu.RLock()
	ts, ok := f.topics[c.Name]
	f.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, c.Name)
	}
	have := ts.meta.Partitions
	if c.Count <= have || c.Count > maxPartitions {
		return fmt.Errorf("%w: topic %s has %d partitions, asked for %d", ErrInvalidPartitions, c.Name, have, c.Count)
	}
	var added []*partition
	for i := have; i < c.Count; i++ {
		p, err := f.createPartition(c.Name, i, ts.meta.Configs)
		if err != nil {
			closeParts(added)
			return f.fail(err)
		}
		added = append(added, p)
	}
	f.dataDirDirty = true
	f.mu.Lock()
	ts.parts = append(ts.parts, added...)
	ts.meta.Partitions = c.Count
	f.mu.Unlock()
	f.dirty.topics[c.Name] = true
	for _, p := range added {
		f.dirty.parts[p.key()] = p
	}
	return nil
}

func (f *fsm) applyAlterConfigs(c *alterConfigsCmd) error {
	f.mu.RLock()
	ts, ok := f.topics[c.Name]
	f.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, c.Name)
	}
	next := map[string]string{}
	if !c.Replace {
		maps.Copy(next, ts.meta.Configs)
	}
	maps.Copy(next, c.Set)
	for _, k := range c.Delete {
		delete(next, k)
	}
	if err := topic.ValidateConfigs(next); err != nil {
		return err
	}
	cfg := f.logConfig(next)
	f.mu.Lock()
	ts.meta.Configs = next
	f.mu.Unlock()
	for _, p := range ts.parts {
		p.log.SetConfig(cfg)
	}
	f.dirty.topics[c.Name] = true
	return nil
}

// deletedTopicQuarantine is how long after a deletion Metadata does not
// auto-create the same name again (RecentlyDeleted): long enough for every
// replica to apply the deletion and checkpoint it. Kafka answers
// UNKNOWN_TOPIC_OR_PARTITION for a topic whose deletion is in progress, so
// a client's "delete, then describe" does not bring the topic back.
const deletedTopicQuarantine = 3 * time.Second

// quarantined is one deletion in the quarantine queue.
type quarantined struct {
	name string
	at   int64
}

// expired reports whether a quarantine that began at (one node's clock)
// is over at now (maybe another node's clock). A difference either way of
// the quarantine's length or more ends it, so a leader's clock far ahead
// or behind cannot make a name unusable.
func quarantineOver(at, now int64) bool {
	d := now - at
	return d >= deletedTopicQuarantine.Milliseconds() || d <= -deletedTopicQuarantine.Milliseconds()
}

// quarantine remembers that name was deleted at now (the leader's clock in
// the command) and forgets quarantines that have ended, oldest first, so
// the map holds only the deletions of the last few seconds. The caller
// holds f.mu.
func (f *fsm) quarantine(name string, now int64) {
	for len(f.deletedQ) > 0 && quarantineOver(f.deletedQ[0].at, now) {
		q := f.deletedQ[0]
		f.deletedQ = f.deletedQ[1:]
		if at, ok := f.deleted[q.name]; ok && at == q.at {
			delete(f.deleted, q.name)
		}
	}
	if now > 0 {
		f.deleted[name] = now
		f.deletedQ = append(f.deletedQ, quarantined{name: name, at: now})
	}
}

// RecentlyDeleted reports whether name was deleted less than
// deletedTopicQuarantine before now. Auto-creation leaves such a name
// alone; an explicit CreateTopics still creates it.
func (s *Store) RecentlyDeleted(name string, now time.Time) bool {
	s.fsm.mu.RLock()
	at, ok := s.fsm.deleted[name]
	s.fsm.mu.RUnlock()
	return ok && !quarantineOver(at, now.UnixMilli())
}
