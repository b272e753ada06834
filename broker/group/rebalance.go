package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maybePrepareRebalance starts a rebalance unless one is already being
// prepared (or the group is dead).
func (g *group) maybePrepareRebalance(now time.Time, reason string) {
	switch g.state {
	case Empty, CompletingRebalance, Stable:
		g.prepareRebalance(now, reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance: SyncGroups that
// wait are told to rejoin, and every member must rejoin by the rebalance
// timeout.
func (g *group) prepareRebalance(now time.Time, reason string) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			m.answerSync(SyncResult{Err: kerr.RebalanceInProgress})
		}
	}
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	g.storing = false
	timeout := g.rebalanceTimeout()
	g.delayUntil, g.delayLeft, g.newMemberAdded = time.Time{}, 0, false
	if g.state == Empty && g.cfg.InitialRebalanceDelay > 0 {
		d := g.cfg.InitialRebalanceDelay
		g.delayUntil = now.Add(d)
		g.delayLeft = max(timeout-d, 0)
	}
	g.joinDeadline = now.Add(timeout)
	g.logger.Info("preparing to rebalance group", "state", g.state, "generation", g.generation, "reason", reason)
	g.state = PreparingRebalance
	g.tryCompleteJoin(now)
}

// allJoined reports whether every member has rejoined and no member id
// handed out with MEMBER_ID_REQUIRED is still expected.
func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if !m.awaitingJoin() {
			return false
		}
	}
	return true
}

// tryCompleteJoin completes the join phase early once everyone is in
// (never during the initial delay, which waits for more members on
// purpose).
func (g *group) tryCompleteJoin(now time.Time) {
	if g.state == PreparingRebalance && g.delayUntil.IsZero() && g.allJoined() {
		g.completeJoin(now)
	}
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are dropped, a leader is picked among those that did, and a new
// generation starts (CompletingRebalance, or Empty if nobody is left).
// Static members that did not rejoin stay: their session timeout, or
// the SyncGroup they then owe, decides.
func (g *group) completeJoin(now time.Time) {
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() && m.instanceID == nil {
			g.logger.Info("removing member that did not rejoin", "member_id", m.id)
			g.remove(m.id, kerr.UnknownMemberID)
		}
	}
	if g.state == Dead {
		return
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that have not rejoined are left: wait
		// another round for them (or for their sessions to end).
		g.logger.Warn("no member rejoined; waiting another rebalance timeout", "members", len(g.members))
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation++
	g.joinDeadline = time.Time{}
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.state = Empty
		g.emptySince = now
		g.logger.Info("group is empty", "generation", g.generation)
		g.storeLatest()
		return
	}
	g.protocol = g.selectProtocol()
	g.state = CompletingRebalance
	for _, m := range g.sortedMembers() {
		m.answerJoin(g.currentJoin(m, m.id == g.leader))
		m.heartbeat(now)
		g.pendingSync[m.id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	g.logger.Info("group completed its join phase", "generation", g.generation, "members", len(g.members),
		"protocol", g.protocol, "leader", g.leader)
}

// electJoinedLeader keeps the leader if it rejoined, or else makes the
// first member that rejoined the leader. It reports false if none did.
func (g *group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.awaitingJoin() {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// removeAndUpdate removes a member that left or died and lets the group
// react: a settled group rebalances, a rebalancing one may now be complete.
func (g *group) removeAndUpdate(now time.Time, id, reason string) {
	g.remove(id, kerr.UnknownMemberID)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now, reason)
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	}
}
