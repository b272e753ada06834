package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// join runs a JoinGroup against the group. The answer goes to ch, now or
// when the rebalance completes.
func (g *group) join(now time.Time, req *JoinRequest, ch chan JoinResult) {
	fail := func(code *kerr.Error) { deliver(ch, JoinResult{Err: code, MemberID: req.MemberID, Generation: -1}) }
	if g.state == Dead {
		// Deleted under our feet: the client finds the coordinator again.
		fail(kerr.CoordinatorNotAvailable)
		return
	}
	// The member whose protocols this join replaces, if any.
	self := ""
	if _, known := g.members[req.MemberID]; known {
		self = req.MemberID
	} else if req.MemberID == "" && req.InstanceID != nil {
		self = g.static[*req.InstanceID]
	}
	if !g.supportsProtocols(self, req.ProtocolType, req.Protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	switch {
	case req.MemberID == "":
		g.joinNew(now, req, ch)
	case hasKey(g.pending, req.MemberID):
		if req.InstanceID != nil {
			// Pending ids are only handed to dynamic members.
			fail(kerr.UnknownMemberID)
			return
		}
		delete(g.pending, req.MemberID)
		g.addAndRebalance(now, req.MemberID, req, ch)
	default:
		g.joinKnown(now, req, ch)
	}
	if g.state == PreparingRebalance {
		g.tryCompleteJoin(now)
	}
}

// joinNew handles a JoinGroup without a member id.
func (g *group) joinNew(now time.Time, req *JoinRequest, ch chan JoinResult) {
	if req.InstanceID != nil {
		id := g.cfg.NewMemberID(*req.InstanceID)
		if old, ok := g.static[*req.InstanceID]; ok {
			g.replaceStatic(now, old, id, req, ch)
			return
		}
		g.addAndRebalance(now, id, req, ch)
		return
	}
	id := g.cfg.NewMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		// KIP-394: the member must come back with this id before it
		// counts, so a client that never does cannot stall rebalances
		// or pile up members.
		g.pending[id] = now.Add(req.SessionTimeout)
		deliver(ch, JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1})
		return
	}
	g.addAndRebalance(now, id, req, ch)
}

// joinKnown handles a JoinGroup from a current member.
func (g *group) joinKnown(now time.Time, req *JoinRequest, ch chan JoinResult) {
	fail := func(code *kerr.Error) { deliver(ch, JoinResult{Err: code, MemberID: req.MemberID, Generation: -1}) }
	if g.fenced(req.InstanceID, req.MemberID) {
		fail(kerr.FencedInstanceID)
		return
	}
	m := g.members[req.MemberID]
	if m == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	switch g.state {
	case PreparingRebalance:
		g.updateAndRebalance(now, m, req, ch, "member rejoined")
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// It lost the answer to its join: repeat it.
			m.heartbeat(now)
			deliver(ch, g.currentJoin(m, m.id == g.leader))
			return
		}
		g.updateAndRebalance(now, m, req, ch, "member changed its metadata while completing the rebalance")
	case Stable:
		switch {
		case m.id == g.leader:
			// The leader rejoins to have the assignment redone (the
			// topics it consumes changed, say).
			g.updateAndRebalance(now, m, req, ch, "the leader rejoined")
		case !m.matches(req.Protocols):
			g.updateAndRebalance(now, m, req, ch, "member changed its metadata")
		default:
			m.heartbeat(now)
			deliver(ch, g.currentJoin(m, false))
		}
	default:
		fail(kerr.UnknownMemberID)
	}
}

// addAndRebalance makes a new member and starts (or joins) a rebalance.
func (g *group) addAndRebalance(now time.Time, id string, req *JoinRequest, ch chan JoinResult) {
	m := &member{id: id, instanceID: req.InstanceID}
	m.update(now, req)
	m.joinCh = ch
	g.add(m, req.ProtocolType)
	if g.state == PreparingRebalance && !g.delayUntil.IsZero() {
		g.newMemberAdded = true
	}
	g.maybePrepareRebalance(now, "new member joined")
}

// updateAndRebalance takes a current member's new JoinGroup and starts (or
// joins) a rebalance.
func (g *group) updateAndRebalance(now time.Time, m *member, req *JoinRequest, ch chan JoinResult, reason string) {
	m.update(now, req)
	m.awaitJoin(ch)
	g.maybePrepareRebalance(now, reason)
}

// replaceStatic gives a known static member, restarted and joining without
// its member id, a new member id (KIP-345). The old id is fenced. A Stable
// group whose protocol and the member's subscription are unchanged does
// not rebalance: the member takes over its old assignment.
func (g *group) replaceStatic(now time.Time, oldID, newID string, req *JoinRequest, ch chan JoinResult) {
	m := g.members[oldID]
	m.answerJoin(JoinResult{Err: kerr.FencedInstanceID, MemberID: oldID, Generation: -1})
	m.answerSync(SyncResult{Err: kerr.FencedInstanceID})
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[*req.InstanceID] = newID
	oldLeader := g.leader
	wasLeader := oldLeader == oldID
	if wasLeader {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	oldMeta := m.metadata(g.protocol)
	m.update(now, req)
	g.logger.Info("static member rejoined with a new member id", "instance_id", *req.InstanceID,
		"old_member_id", oldID, "member_id", newID, "state", g.state)

	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol && m.supports(g.protocol) && g.sameSubscription(oldMeta, m.metadata(g.protocol)) {
			r := g.currentJoin(m, false)
			r.LeaderID = oldLeader
			if wasLeader && req.SupportSkipAssignment {
				// KIP-814: the leader learns the members (to notice
				// metadata changes) but keeps the current assignment.
				r.LeaderID = newID
				r.SkipAssignment = true
				r.Members = g.memberMetadata()
			}
			// The member learns its new id once the record with it
			// is durable, so that a coordinator that takes over
			// fences the old one too (as Kafka answers only once its
			// write is done). If the write fails the member is told
			// and the group rebalances.
			m.joinCh = ch
			gen := g.generation
			g.store(false, func(now time.Time, err *kerr.Error) {
				if g.members[newID] != m || m.joinCh != ch || g.generation != gen {
					return // answered by whatever came since
				}
				if err != nil {
					m.answerJoin(JoinResult{Err: err, MemberID: newID, Generation: -1})
					g.maybePrepareRebalance(now, "storing a static member's new member id failed")
					return
				}
				m.answerJoin(r)
			})
			return
		}
		m.joinCh = ch
		g.prepareRebalance(now, "static member rejoined with a changed subscription")
	case CompletingRebalance:
		// The leader may be assigning to the old id: start over.
		m.joinCh = ch
		g.prepareRebalance(now, "static member rejoined while the group completed a rebalance")
	default:
		m.joinCh = ch
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}
