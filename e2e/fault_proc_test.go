package e2e

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// Process faults: SIGKILL (heal restarts) and SIGSTOP (heal sends SIGCONT).

// faultKill SIGKILLs the leader, a follower, or every node at once
// (role "leader", "follower", "all"); heal starts them again and waits
// until each answers /readyz.
type faultKill struct {
	role    string
	victims []int
}

func (f *faultKill) name() string { return "kill-" + f.role }

func (f *faultKill) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	f.victims = nil
	if f.role == "all" {
		for i, bp := range c.nodes {
			if bp.running() {
				f.victims = append(f.victims, i)
			}
		}
	} else {
		f.victims = []int{faultTarget(t, c, rng, f.role)}
	}
	for _, v := range f.victims {
		c.nodes[v].kill()
	}
	t.Logf("%s: SIGKILL node(s) %v", f.name(), faultIDs(f.victims))
}

func (f *faultKill) heal(t *testing.T, c *procCluster) {
	t.Helper()
	for _, v := range f.victims {
		c.nodes[v].launch()
	}
	for _, v := range f.victims {
		c.nodes[v].waitReady(60 * time.Second)
	}
	f.victims = nil
}

// faultPause SIGSTOPs the leader or a follower; heal sends SIGCONT.
type faultPause struct {
	role   string
	victim int
	paused bool
}

func (f *faultPause) name() string { return "pause-" + f.role }

func (f *faultPause) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	f.victim = faultTarget(t, c, rng, f.role)
	c.nodes[f.victim].signal(syscall.SIGSTOP)
	f.paused = true
	t.Logf("%s: SIGSTOP node %d", f.name(), f.victim+1)
}

func (f *faultPause) heal(t *testing.T, c *procCluster) {
	t.Helper()
	if !f.paused {
		return
	}
	c.nodes[f.victim].signal(syscall.SIGCONT)
	f.paused = false
}

// faultIDs turns node indexes into node ids, for logs.
func faultIDs(idx []int) []int {
	out := make([]int, len(idx))
	for i, v := range idx {
		out[i] = v + 1
	}
	return out
}

func TestFaultProcKillLeader(t *testing.T) {
	faultRun(t, &faultKill{role: "leader"}, faultOpts{})
}

func TestFaultProcKillFollower(t *testing.T) {
	// A follower's death must not fail a single produce.
	faultRun(t, &faultKill{role: "follower"}, faultOpts{strict: true})
}

func TestFaultProcKillAll(t *testing.T) {
	faultRun(t, &faultKill{role: "all"}, faultOpts{rounds: 2, hold: time.Second})
}

func TestFaultProcPauseLeader(t *testing.T) {
	faultRun(t, &faultPause{role: "leader"}, faultOpts{})
}

func TestFaultProcPauseFollower(t *testing.T) {
	faultRun(t, &faultPause{role: "follower"}, faultOpts{strict: true})
}
