package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// leave removes the members of a LeaveGroup and returns one error (or nil)
// for each.
func (g *group) leave(now time.Time, members []LeavingMember) []*kerr.Error {
	out := make([]*kerr.Error, len(members))
	for i, lm := range members {
		switch {
		case lm.MemberID == "":
			// An administrative removal by instance id.
			if lm.InstanceID == nil || !hasKey(g.static, *lm.InstanceID) {
				out[i] = kerr.UnknownMemberID
				continue
			}
			g.removeAndUpdate(now, g.static[*lm.InstanceID], "static member removed by instance id")
		case hasKey(g.pending, lm.MemberID):
			delete(g.pending, lm.MemberID)
			if g.state == PreparingRebalance {
				g.tryCompleteJoin(now)
			}
		case g.fenced(lm.InstanceID, lm.MemberID):
			out[i] = kerr.FencedInstanceID
		case g.members[lm.MemberID] != nil:
			g.removeAndUpdate(now, lm.MemberID, "member left")
		default:
			out[i] = kerr.UnknownMemberID
		}
	}
	return out
}
