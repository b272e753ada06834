package raftstore

import (
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// In-sync replicas as Kafka reports them: the members the leader has heard
// from within replica.lag.time.max.ms. Raft tells the leader when
// heartbeats to a peer start failing (with the time of the last contact)
// and when they resume; a member whose heartbeats have failed for longer
// than the lag is out of sync.

// DefaultReplicaLag is Kafka's replica.lag.time.max.ms.
const DefaultReplicaLag = 30 * time.Second

type contactTracker struct {
	mu      sync.Mutex
	failing map[int32]time.Time // peer -> last contact, while heartbeats fail
}

// watchContacts follows raft's heartbeat observations until stop closes.
func (s *Store) watchContacts() {
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.LeaderObservation:
			return true
		}
		return false
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	for {
		select {
		case <-s.stop:
			return
		case o := <-ch:
			s.contacts.mu.Lock()
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				if id, err := strconv.Atoi(string(d.PeerID)); err == nil {
					if _, ok := s.contacts.failing[int32(id)]; !ok {
						s.contacts.failing[int32(id)] = d.LastContact
					}
				}
			case raft.ResumedHeartbeatObservation:
				if id, err := strconv.Atoi(string(d.PeerID)); err == nil {
					delete(s.contacts.failing, int32(id))
				}
			case raft.LeaderObservation:
				// A new term: the new leader learns contacts afresh.
				clear(s.contacts.failing)
			}
			s.contacts.mu.Unlock()
		}
	}
}

// InSync reports whether member id is in sync: a current voter that is the
// leader itself, or one the leader has heard from within the lag. A
// removed node, a non-voter or an unknown id never is. A node that does
// not lead cannot tell and says every voter is.
func (s *Store) InSync(id int32, lag time.Duration, now time.Time) bool {
	if !s.isVoter(id) {
		return false
	}
	if !s.IsLeader() || id == s.cfg.NodeID {
		return true
	}
	s.contacts.mu.Lock()
	last, failing := s.contacts.failing[id]
	s.contacts.mu.Unlock()
	return !failing || now.Sub(last) <= lag
}

// isVoter reports whether id is a voter in raft's latest configuration.
func (s *Store) isVoter(id int32) bool {
	srv, ok := s.server(id)
	return ok && srv.Suffrage == raft.Voter
}

// isMember reports whether id is in raft's latest configuration.
func (s *Store) isMember(id int32) bool {
	_, ok := s.server(id)
	return ok
}

// configuredAddr is id's address in raft's latest configuration.
func (s *Store) configuredAddr(id raft.ServerID) (raft.ServerAddress, bool) {
	r := s.raftRef.Load()
	if r == nil {
		return "", false
	}
	for _, srv := range r.GetConfiguration().Configuration().Servers {
		if srv.ID == id {
			return srv.Address, true
		}
	}
	return "", false
}

func (s *Store) server(id int32) (raft.Server, bool) {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return raft.Server{}, false
	}
	sid := raft.ServerID(strconv.Itoa(int(id)))
	for _, srv := range f.Configuration().Servers {
		if srv.ID == sid {
			return srv, true
		}
	}
	return raft.Server{}, false
}

// Voters lists the node ids of raft's voters, sorted.
func (s *Store) Voters() []int32 {
	ms, err := s.Members()
	if err != nil {
		return nil
	}
	var out []int32
	for _, m := range ms {
		if m.Suffrage == raft.Voter.String() {
			out = append(out, m.NodeID)
		}
	}
	return out
}
