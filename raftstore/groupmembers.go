package raftstore

import (
	"context"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// Group membership records. The group coordinator (broker/group) runs on
// the leader and keeps membership in memory; it also writes each group's
// membership here when a rebalance completes, as Kafka's coordinator writes
// it to __consumer_offsets, so that a new leader takes the groups over
// where they were instead of making every member rejoin. The record is the
// coordinator's own encoding: raftstore stores it and hands it back without
// reading it.

// MaxGroupMembersBytes bounds one group's membership record. Kafka's bound
// is the offsets topic's largest message (1 MiB by default); a group whose
// members' subscriptions and assignments outgrow this one fails its
// rebalance with an error rather than grow the replicated state without
// limit.
const MaxGroupMembersBytes = 4 << 20

// MaxGroupMembersBatch is how many record bytes a writer puts in one
// command: encoded (base64 in JSON) they stay within one raft entry's
// share, maxEntryBytes. A record larger than this goes alone.
const MaxGroupMembersBatch = maxEntryBytes * 3 / 4

// GroupMembers is one group's membership record; a nil Data deletes it.
type GroupMembers struct {
	Group string `json:"group"`
	Data  []byte `json:"data,omitempty"`
}

type groupMembersCmd struct {
	// Term is the raft term of the leadership whose coordinator wrote the
	// records: apply refuses them in an entry of any other term, so that
	// records a coordinator queued before it lost leadership cannot land
	// after a later coordinator (even on the same node) read the records.
	Term    int32          `json:"term"`
	Records []GroupMembers `json:"records"`
}

func (c *groupMembersCmd) validate() error {
	for _, r := range c.Records {
		switch {
		case r.Group == "" || len(r.Group) > MaxIDBytes:
			return fmt.Errorf("%w: group id of %d bytes", ErrInvalidGroupID, len(r.Group))
		case len(r.Data) > MaxGroupMembersBytes:
			return fmt.Errorf("%w: membership of group %s is %d bytes, more than %d", ErrInvalidCommand, r.Group, len(r.Data), MaxGroupMembersBytes)
		}
	}
	return nil
}

// applyGroupMembers stores the records in order (a later record of the
// same group wins), or none of them if any is invalid or the entry is of
// another term than the one they were written in.
func (f *fsm) applyGroupMembers(c *groupMembersCmd, term int32) error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.Term != term {
		return fmt.Errorf("%w: group membership records of the leader of term %d, committed in term %d", ErrNotLeader, c.Term, term)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.members == nil {
		f.members = map[string][]byte{}
	}
	for _, r := range c.Records {
		if r.Data == nil {
			delete(f.members, r.Group)
		} else {
			f.members[r.Group] = r.Data
		}
		f.dirty.members[r.Group] = true
	}
	return nil
}

// checkpointGroupMembers captures the records that changed.
func (f *fsm) checkpointGroupMembers(job *ckptJob) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for g := range f.dirty.members {
		if data, ok := f.members[g]; ok {
			job.put(bucketMembers, []byte(g), data)
		} else {
			job.delete(bucketMembers, []byte(g))
		}
	}
	return nil
}

func (f *fsm) loadGroupMembers(tx *bolt.Tx) error {
	f.members = map[string][]byte{}
	return tx.Bucket(bucketMembers).ForEach(func(k, v []byte) error {
		f.members[string(k)] = append([]byte(nil), v...)
		return nil
	})
}

// StoreGroupMembers writes membership records through raft, in order, for
// the coordinator of the leadership of term (LeaderEpoch when it started).
// It returns once they are committed and applied.
func (s *Store) StoreGroupMembers(ctx context.Context, term int32, records []GroupMembers) error {
	c := groupMembersCmd{Term: term, Records: records}
	if err := c.validate(); err != nil {
		return err
	}
	return s.proposeJSON(ctx, cmdGroupMembers, c)
}

// GroupMembersRecords returns every group's membership record, as this
// node has applied them. The map is the caller's; the byte slices must not
// be modified.
func (s *Store) GroupMembersRecords() map[string][]byte {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return maps.Clone(s.fsm.members)
}
