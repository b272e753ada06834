package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// heartbeat keeps a member's session alive and tells it whether a
// rebalance is under way.
func (g *group) heartbeat(now time.Time, req *HeartbeatRequest) *kerr.Error {
	m := g.members[req.MemberID]
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.fenced(req.InstanceID, req.MemberID):
		return kerr.FencedInstanceID
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	switch g.state {
	case PreparingRebalance:
		m.heartbeat(now)
		return kerr.RebalanceInProgress
	case CompletingRebalance, Stable:
		// A member may heartbeat between its JoinGroup answer and its
		// SyncGroup: that is a normal heartbeat.
		m.heartbeat(now)
		return nil
	default: // Empty
		return kerr.UnknownMemberID
	}
}
