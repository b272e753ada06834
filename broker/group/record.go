package group

import (
	"encoding/json"
	"fmt"
	"math"
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
		// Only the chosen protocol's metadata, as Kafka keeps: a member
		// that rejoins later with its full list rebalances the group,
		// which the record does not need to spare it.
		r.Members = append(r.Members, recordMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeoutMs: m.sessionTimeout.Milliseconds(), RebalanceTimeoutMs: m.rebalanceTimeout.Milliseconds(),
			Protocols: []Protocol{{Name: g.protocol, Metadata: m.metadata(g.protocol)}}, Assignment: m.assignment,
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
// Empty. A record that does not decode is refused; one that decodes but
// does not describe a group that could have been written gives an Empty
// group of its generation (its members rejoin, and the generation goes on
// from there), with the reason.
func restoreGroup(cfg *Config, id string, data []byte, now time.Time) (*group, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode the membership of group %s: %w", id, err)
	}
	if r.Generation < 0 || r.Generation == math.MaxInt32 {
		return nil, fmt.Errorf("membership of group %s: generation %d", id, r.Generation)
	}
	g := newGroup(cfg, id, now)
	g.generation, g.durableGen = r.Generation, r.Generation
	if len(r.Members) == 0 {
		g.protocolType = r.ProtocolType
		return g, nil // Empty
	}
	if err := g.restoreMembers(&r, now); err != nil {
		empty := newGroup(cfg, id, now)
		empty.generation, empty.durableGen = r.Generation, r.Generation
		return empty, err
	}
	return g, nil
}

// restoreMembers makes g the Stable group of r's members.
func (g *group) restoreMembers(r *record, now time.Time) error {
	if r.ProtocolType == "" {
		return fmt.Errorf("membership of group %s: members without a protocol type", g.id)
	}
	for _, rm := range r.Members {
		m := &member{
			id: rm.ID, instanceID: rm.InstanceID, clientID: rm.ClientID, clientHost: rm.ClientHost,
			sessionTimeout:   time.Duration(rm.SessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(rm.RebalanceTimeoutMs) * time.Millisecond,
			protocols:        rm.Protocols, assignment: rm.Assignment,
		}
		switch {
		case m.id == "" || g.members[m.id] != nil:
			return fmt.Errorf("membership of group %s: member id %q empty or twice", g.id, m.id)
		case m.sessionTimeout <= 0:
			return fmt.Errorf("membership of group %s: member %s has session timeout %s", g.id, m.id, m.sessionTimeout)
		case m.instanceID != nil && g.static[*m.instanceID] != "":
			return fmt.Errorf("membership of group %s: instance id %q twice", g.id, *m.instanceID)
		case !m.supports(r.Protocol):
			return fmt.Errorf("membership of group %s: member %s lacks protocol %q", g.id, m.id, r.Protocol)
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.heartbeat(now)
		m.seq = g.nextSeq
		g.nextSeq++
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if g.members[r.Leader] == nil {
		return fmt.Errorf("membership of group %s: leader %q is not a member", g.id, r.Leader)
	}
	g.protocolType, g.protocol, g.leader, g.state = r.ProtocolType, r.Protocol, r.Leader, Stable
	return nil
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

// storeLatest writes the group's record when nobody waits on the write;
// if it fails, Tick writes the record again a second later.
func (g *group) storeLatest() {
	g.store(false, func(now time.Time, err *kerr.Error) {
		if err != nil {
			g.recordStale, g.retryAt = true, now.Add(recordRetry)
		}
	})
}

// recordRetry is how long after a failed write storeLatest tries again.
const recordRetry = time.Second

// retryRecord writes the record again if a write that nobody waited on
// failed, once the group is settled.
func (g *group) retryRecord(now time.Time) {
	if g.recordStale && !g.storing && !now.Before(g.retryAt) && (g.state == Empty || g.state == Stable) {
		g.recordStale = false
		g.storeLatest()
	}
}
