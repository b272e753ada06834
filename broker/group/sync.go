package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sync runs a SyncGroup against the group. The answer goes to ch, now or
// when the leader's assignment arrives.
func (g *group) sync(now time.Time, req *SyncRequest, ch chan SyncResult) {
	fail := func(code *kerr.Error) { deliver(ch, SyncResult{Err: code}) }
	m := g.members[req.MemberID]
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable)
		return
	case g.fenced(req.InstanceID, req.MemberID):
		fail(kerr.FencedInstanceID)
		return
	case m == nil:
		fail(kerr.UnknownMemberID)
		return
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	switch g.state {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		g.dropPendingSync(m.id)
		m.awaitSync(ch)
		if m.id == g.leader && !g.storing {
			g.assign(req.Assignments)
		}
	case Stable:
		g.dropPendingSync(m.id)
		m.heartbeat(now)
		deliver(ch, g.syncAnswer(m))
	default: // Empty
		fail(kerr.UnknownMemberID)
	}
}

// assign takes the leader's plan: every member gets its part (members the
// plan leaves out get an empty assignment, ids it names that are not
// members are ignored). Once the group's membership record with the plan is
// durable, the group becomes Stable and waiting SyncGroups are answered; if
// it cannot be written they are told why and the group rebalances, as
// Kafka's coordinator does when its write to __consumer_offsets fails.
func (g *group) assign(plan []Assignment) {
	parts := make(map[string][]byte, len(plan))
	for _, a := range plan {
		parts[a.MemberID] = a.Assignment
	}
	for _, m := range g.members {
		m.assignment = parts[m.id]
	}
	gen := g.generation
	g.storing = true
	g.store(false, func(now time.Time, err *kerr.Error) {
		if !g.storing || g.state != CompletingRebalance || g.generation != gen {
			return // the group moved on while the record was written
		}
		g.storing = false
		if err == nil {
			g.durableGen = gen
		}
		if err != nil {
			for _, m := range g.members {
				m.assignment = nil
				m.answerSync(SyncResult{Err: err})
			}
			g.prepareRebalance(now, "storing the group's assignment failed")
			return
		}
		g.stabilize(now)
	})
}

// stabilize makes the group Stable and answers the waiting SyncGroups.
func (g *group) stabilize(now time.Time) {
	g.state = Stable
	for _, m := range g.sortedMembers() {
		if m.awaitingSync() {
			m.heartbeat(now)
			m.answerSync(g.syncAnswer(m))
		}
	}
	g.logger.Info("group is stable", "generation", g.generation, "members", len(g.members))
}

func (g *group) syncAnswer(m *member) SyncResult {
	return SyncResult{ProtocolType: strPtr(g.protocolType), Protocol: strPtr(g.protocol), Assignment: m.assignment}
}
