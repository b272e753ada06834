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
		if m.id == g.leader {
			g.assign(now, req.Assignments)
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
// members are ignored), the group becomes Stable, and waiting SyncGroups are
// answered.
func (g *group) assign(now time.Time, plan []Assignment) {
	parts := make(map[string][]byte, len(plan))
	for _, a := range plan {
		parts[a.MemberID] = a.Assignment
	}
	for _, m := range g.members {
		m.assignment = parts[m.id]
	}
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
