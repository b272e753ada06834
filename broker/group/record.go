package group

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A group's membership record is what the coordinator persists of it, as
// Kafka's coordinator writes a group's metadata to __consumer_offsets: the
// generation, the protocol and every member with its assignment. It is
// written when a rebalance completes (before the members learn their
// assignments, so that no member can commit offsets in a generation a new
// coordinator would not know), when the group becomes empty, when a static
// member takes a new member id, and deleted when the group goes. A
// coordinator that takes over loads the records: members carry on with
// their generation instead of rejoining.

// record is the encoding (JSON) of a group's membership.
type record struct {
	Generation   int32          `json:"generation"`
	ProtocolType string         `json:"protocol_type,omitempty"`
	Protocol     string         `json:"protocol,omitempty"`
	Leader       string         `json:"leader,omitempty"`
	Members      []recordMember `json:"members,omitempty"` // in join order
}

type recordMember struct {
	ID                 string     `json:"id"`
	InstanceID         *string    `json:"instance_id,omitempty"`
	ClientID           string     `json:"client_id,omitempty"`
	ClientHost         string     `json:"client_host,omitempty"`
	SessionTimeoutMs   int64      `json:"session_timeout_ms"`
	RebalanceTimeoutMs int64      `json:"rebalance_timeout_ms"`
	Protocols          []Protocol `json:"protocols,omitempty"`
	Assignment         []byte     `json:"assignment,omitempty"`
}

// encodeRecord is the group's membership record.
func (g *group) encodeRecord() []byte {
	r := record{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader}
	for _, m := range g.sortedMembers() {
		r.Members = append(r.Members, recordMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeoutMs: m.sessionTimeout.Milliseconds(), RebalanceTimeoutMs: m.rebalanceTimeout.Milliseconds(),
			Protocols: m.protocols, Assignment: m.assignment,
		})
	}
	buf, err := json.Marshal(&r)
	if err != nil {
		panic(fmt.Sprintf("encode the membership of group %s: %v", g.id, err)) // plain data: cannot fail
	}
	return buf
}

// restoreGroup rebuilds a group from its membership record: Stable with
// its members and their assignments (each member's session starts now), or
// Empty. A record that does not decode, or does not describe a group that
// could have been written, is refused.
func restoreGroup(cfg *Config, id string, data []byte, now time.Time) (*group, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode the membership of group %s: %w", id, err)
	}
	if r.Generation < 0 {
		return nil, fmt.Errorf("membership of group %s: generation %d", id, r.Generation)
	}
	g := newGroup(cfg, id, now)
	g.generation, g.protocolType = r.Generation, r.ProtocolType
	if len(r.Members) == 0 {
		return g, nil // Empty
	}
	for _, rm := range r.Members {
		m := &member{
			id: rm.ID, instanceID: rm.InstanceID, clientID: rm.ClientID, clientHost: rm.ClientHost,
			sessionTimeout:   time.Duration(rm.SessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(rm.RebalanceTimeoutMs) * time.Millisecond,
			protocols:        rm.Protocols, assignment: rm.Assignment,
		}
		if m.id == "" || m.sessionTimeout <= 0 || g.members[m.id] != nil {
			return nil, fmt.Errorf("membership of group %s: member %q with session timeout %s", id, m.id, m.sessionTimeout)
		}
		m.heartbeat(now)
		m.seq = g.nextSeq
		g.nextSeq++
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if g.members[r.Leader] == nil || r.Protocol == "" {
		return nil, fmt.Errorf("membership of group %s: leader %q, protocol %q", id, r.Leader, r.Protocol)
	}
	g.protocol, g.leader, g.state = r.Protocol, r.Leader, Stable
	return g, nil
}

// persist writes the group's membership record, or deletes it when gone
// is set. then, if not nil, runs under the coordinator's lock once the
// write is durable or has failed, provided this coordinator still serves
// this very group; the error is what the members waiting on it are to be
// told.
func (c *Coordinator) persist(g *group, gone bool, then func(now time.Time, err *kerr.Error)) {
	if c.cfg.Persist == nil {
		if then != nil {
			then(c.cfg.Clock.Now(), nil)
		}
		return
	}
	var data []byte
	if !gone {
		data = g.encodeRecord()
	}
	epoch := c.epoch
	c.cfg.Persist(g.id, data, func(err *kerr.Error) {
		if err != nil {
			g.logger.Warn("storing the group's membership failed", "err", err)
		}
		if then == nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.status != active || c.epoch != epoch || c.groups[g.id] != g {
			return
		}
		then(c.cfg.Clock.Now(), err)
	})
}
