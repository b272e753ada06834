package raftstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// The cluster's membership is raft's configuration; each member's Kafka
// and admin addresses are the BrokerInfo it registered in the FSM.

// setClusterIDCmd sets the cluster id once; later ones are ignored, so the
// first leader's id is the cluster's on every replica.
type setClusterIDCmd struct {
	ID string `json:"id"`
}

func (f *fsm) applySetClusterID(c *setClusterIDCmd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clusterID == "" && c.ID != "" {
		f.clusterID = c.ID
		f.dirty.meta = true
	}
}

// ClusterID is the cluster's id; "" until the first leader has set it.
func (s *Store) ClusterID() string {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return s.fsm.clusterID
}

// RaftAddr is the raft address other members dial to reach this node.
func (s *Store) RaftAddr() string { return string(s.trans.LocalAddr()) }

// Member is one server in raft's configuration.
type Member struct {
	NodeID   int32      `json:"node_id"`
	RaftAddr string     `json:"raft_addr"`
	Suffrage string     `json:"suffrage"`
	Leader   bool       `json:"leader"`
	Broker   BrokerInfo `json:"-"`
	// Registered reports whether the member registered its Kafka identity.
	Registered bool `json:"-"`
}

// Members lists raft's latest configuration, sorted by node id.
func (s *Store) Members() ([]Member, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	leader, _ := s.Leader()
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	var out []Member
	for _, srv := range f.Configuration().Servers {
		id, err := strconv.Atoi(string(srv.ID))
		if err != nil {
			continue
		}
		b, ok := s.fsm.brokers[int32(id)]
		out = append(out, Member{NodeID: int32(id), RaftAddr: string(srv.Address), Suffrage: srv.Suffrage.String(), Leader: int32(id) == leader, Broker: b, Registered: ok})
	}
	slices.SortFunc(out, func(a, b Member) int { return int(a.NodeID - b.NodeID) })
	return out, nil
}

// VerifyLeader confirms, by a round of heartbeats to a quorum, that this
// node still leads: a deposed leader that has not noticed yet fails.
func (s *Store) VerifyLeader(ctx context.Context) error {
	if s.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return s.await(ctx, s.raft.VerifyLeader())
}

// AddVoter adds a node to the cluster as a voter (the leader only). Adding
// a member that is already there with the same address does nothing.
func (s *Store) AddVoter(ctx context.Context, id int32, addr string) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	f := s.raft.AddVoter(raft.ServerID(strconv.Itoa(int(id))), raft.ServerAddress(addr), 0, timeoutOf(ctx, s.cfg.ApplyTimeout))
	if err := s.await(ctx, f); err != nil {
		return err
	}
	return nil
}

// RemoveMember removes a node from the cluster (the leader only). The
// node's registration goes with it: proposed here, or, when the leader
// removed itself and stepped down, by the next leader (pruneRegistrations).
func (s *Store) RemoveMember(ctx context.Context, id int32) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	f := s.raft.RemoveServer(raft.ServerID(strconv.Itoa(int(id))), 0, timeoutOf(ctx, s.cfg.ApplyTimeout))
	if err := s.await(ctx, f); err != nil {
		return err
	}
	if id == s.cfg.NodeID {
		return nil
	}
	return s.proposeJSON(ctx, cmdUnregisterBroker, unregisterBrokerCmd{NodeID: id})
}

// pruneRegistrations unregisters brokers that are no longer in raft's
// configuration (the leader only). A removal whose unregister was lost (a
// leader that removed itself, a proposal that timed out) is finished here.
func (s *Store) pruneRegistrations(ctx context.Context) error {
	if !s.IsLeader() {
		return nil
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("raft configuration: %w", err)
	}
	members := map[int32]bool{}
	for _, srv := range f.Configuration().Servers {
		if id, err := strconv.Atoi(string(srv.ID)); err == nil {
			members[int32(id)] = true
		}
	}
	var gone []int32
	s.fsm.mu.RLock()
	for id := range s.fsm.brokers {
		if !members[id] {
			gone = append(gone, id)
		}
	}
	s.fsm.mu.RUnlock()
	for _, id := range gone {
		s.logger.Info("unregistering a broker that is no longer a member", "node_id", id)
		if err := s.proposeJSON(ctx, cmdUnregisterBroker, unregisterBrokerCmd{NodeID: id}); err != nil {
			return fmt.Errorf("unregister node %d: %w", id, err)
		}
	}
	return nil
}

// TransferLeadershipTo hands leadership to a given voter.
func (s *Store) TransferLeadershipTo(ctx context.Context, id int32) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	ms, err := s.Members()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.NodeID != id {
			continue
		}
		if m.Leader {
			return nil
		}
		f := s.raft.LeadershipTransferToServer(raft.ServerID(strconv.Itoa(int(id))), raft.ServerAddress(m.RaftAddr))
		if err := s.await(ctx, f); err != nil {
			return fmt.Errorf("raft leadership transfer to %d: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("%w: node %d is not a member", ErrUnknownMember, id)
}

// RegisterBroker records a node's Kafka identity (the leader only). Only a
// member may register: a removed node that has not noticed yet must not
// come back into Metadata.
func (s *Store) RegisterBroker(ctx context.Context, b BrokerInfo) error {
	if !s.isMember(b.NodeID) {
		return fmt.Errorf("%w: node %d is not in raft's configuration", ErrUnknownMember, b.NodeID)
	}
	return s.proposeJSON(ctx, cmdRegisterBroker, registerBrokerCmd{Broker: b})
}

// Registered returns the identity a node registered.
func (s *Store) Registered(id int32) (BrokerInfo, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	b, ok := s.fsm.brokers[id]
	return b, ok
}

type unregisterBrokerCmd struct {
	NodeID int32 `json:"node_id"`
}

func (f *fsm) applyUnregisterBroker(c *unregisterBrokerCmd) {
	f.mu.Lock()
	delete(f.brokers, c.NodeID)
	f.mu.Unlock()
	f.dirty.meta = true
}

func timeoutOf(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return def
}

// dialProvider is raft's ServerAddressProvider for overrides, nil without
// any (raft then dials the configured addresses). Raft asks it before
// every dial, heartbeats included.
func dialProvider(overrides []Peer, configured func(raft.ServerID) (raft.ServerAddress, bool)) raft.ServerAddressProvider {
	if len(overrides) == 0 {
		return nil
	}
	return &dialOverrides{peers: overrides, configured: configured}
}

// dialOverrides dials the peers it lists at their override and the others
// at their address in raft's configuration.
type dialOverrides struct {
	peers      []Peer
	configured func(raft.ServerID) (raft.ServerAddress, bool)
}

func (d *dialOverrides) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	for _, p := range d.peers {
		if strconv.Itoa(int(p.ID)) == string(id) {
			return raft.ServerAddress(p.Addr), nil
		}
	}
	if addr, ok := d.configured(id); ok {
		return addr, nil
	}
	return "", fmt.Errorf("node %s is not in raft's configuration", id)
}
