package group

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// tick acts on every deadline of the group that has passed: member ids
// handed out but never used, sessions without heartbeats, the end of the
// join phase, and SyncGroups that never came.
func (g *group) tick(now time.Time) {
	g.retryRecord(now)
	expiredPending := false
	for id, exp := range g.pending {
		if !now.Before(exp) {
			delete(g.pending, id)
			expiredPending = true
		}
	}
	if expiredPending && g.state == PreparingRebalance {
		g.tryCompleteJoin(now)
	}

	var expired []*member
	for _, m := range g.members {
		if !m.awaitingJoin() && !m.awaitingSync() && !now.Before(m.deadline) {
			expired = append(expired, m)
		}
	}
	slices.SortFunc(expired, func(a, b *member) int { return cmp.Compare(a.seq, b.seq) })
	for _, m := range expired {
		if g.members[m.id] != m || m.awaitingJoin() || m.awaitingSync() || now.Before(m.deadline) {
			continue // an earlier removal changed things
		}
		g.logger.Info("member session expired", "member_id", m.id, "session_timeout", m.sessionTimeout)
		g.removeAndUpdate(now, m.id, "member session expired")
	}

	if g.state == PreparingRebalance {
		switch {
		case !g.delayUntil.IsZero():
			if now.Before(g.delayUntil) {
				break
			}
			if g.newMemberAdded && g.delayLeft > 0 {
				// More members arrived during the delay: wait again.
				d := min(g.cfg.InitialRebalanceDelay, g.delayLeft)
				g.delayUntil = now.Add(d)
				g.delayLeft -= d
				g.newMemberAdded = false
				break
			}
			g.delayUntil = time.Time{}
			g.completeJoin(now)
		case !now.Before(g.joinDeadline):
			g.completeJoin(now)
		}
	}

	if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 && !now.Before(g.syncDeadline) {
		for id := range g.pendingSync {
			g.logger.Info("removing member that did not sync within the rebalance timeout", "member_id", id)
			g.remove(id, kerr.UnknownMemberID)
		}
		g.prepareRebalance(now, "members did not sync")
	}
}
