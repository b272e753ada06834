package node

import "testing"

func TestJudgeRemoval(t *testing.T) {
	members := func(ids ...int32) []ClusterMember {
		var out []ClusterMember
		for _, id := range ids {
			out = append(out, ClusterMember{NodeID: id})
		}
		return out
	}
	const self = 4
	cases := []struct {
		name          string
		st            ClusterStatus
		asked         int32
		gone, trusted bool
	}{
		{"the leader lists us", ClusterStatus{NodeID: 1, LeaderID: 1, LeaderVerified: true, Members: members(1, 2, 3, 4)}, 1, false, true},
		{"the leader does not list us", ClusterStatus{NodeID: 1, LeaderID: 1, LeaderVerified: true, Members: members(1, 2, 3)}, 1, true, true},
		{"a follower does not list us", ClusterStatus{NodeID: 2, LeaderID: 1, Members: members(1, 2, 3)}, 2, false, false},
		{"a leader that could not verify its leadership", ClusterStatus{NodeID: 1, LeaderID: 1, Members: members(1, 2, 3)}, 1, false, false},
		{"an answer from another node than asked", ClusterStatus{NodeID: 1, LeaderID: 1, LeaderVerified: true, Members: members(1, 2, 3)}, 2, false, false},
		{"no leader known", ClusterStatus{NodeID: 2, LeaderID: -1, Members: members(1, 2, 3)}, 2, false, false},
		{"no members", ClusterStatus{NodeID: 1, LeaderID: 1, LeaderVerified: true}, 1, false, false},
		{"an older answer format", ClusterStatus{LeaderID: 1, Members: members(1, 2, 3)}, 1, false, false},
	}
	for _, c := range cases {
		gone, trusted := judgeRemoval(c.st, c.asked, self)
		if gone != c.gone || trusted != c.trusted {
			t.Errorf("%s: gone=%v trusted=%v, want %v %v", c.name, gone, trusted, c.gone, c.trusted)
		}
	}
}

// TestRemovalNeedsTwoAnswers: one answer saying removed does not stop the
// node; two in a row do; an answer in between resets the count.
func TestRemovalNeedsTwoAnswers(t *testing.T) {
	var n Node
	for i, c := range []struct{ gone, want bool }{
		{true, false}, {false, false}, {true, false}, {true, true}, {true, true}, {false, false}, {true, false},
	} {
		if got := n.noteRemoval(c.gone); got != c.want {
			t.Fatalf("check %d (gone=%v): removed=%v, want %v", i, c.gone, got, c.want)
		}
	}
}
