package e2e

import "testing"

// harnessFaults returns one instance of each fault the harness can inject,
// by name (each fault's name()). A fault instance keeps the state of its
// current injection (its target, the file it filled), so a run uses each
// instance for one cluster at a time. Faults that implement nodeSetup must
// have setupNode called for every node before the cluster starts
// (newProcClusterEach); they refuse to inject otherwise.
//
// What each does to the cluster:
//   - kill-*: SIGKILL; heal restarts and waits for /readyz.
//   - pause-*: SIGSTOP; heal sends SIGCONT.
//   - net-*: raft links through proxies (nodeSetup), cut by refusing
//     (RST) or as a blackhole (silence; stalled streams resume on heal).
//   - corrupt-*: a follower is stopped, a file damaged, and it is started
//     again; heal checks that it never led while damaged and served no
//     damaged batch, and wipes it (rebuilt from its peers) if it refused
//     to start or still holds the damage. Needs nodeSetup (racks).
//   - disk-full-*: a 256 MiB tmpfs per data directory (nodeSetup; needs
//     root), filled on inject, emptied on heal.
func harnessFaults() map[string]fault {
	all := []fault{
		&faultKill{role: "leader"},
		&faultKill{role: "follower"},
		&faultKill{role: "all"},
		&faultPause{role: "leader"},
		&faultPause{role: "follower"},
		&faultDiskFull{role: "follower"},
		&faultDiskFull{role: "leader"},
	}
	for _, scope := range []string{"link-oneway", "link-both", "isolate-follower", "isolate-leader"} {
		for _, mode := range []proxyMode{proxyRefuse, proxyBlackhole} {
			all = append(all, &faultNet{scope: scope, mode: mode})
		}
	}
	for _, target := range []string{"segment", "state", "wal"} {
		for _, how := range []string{"flip", "truncate"} {
			all = append(all, &faultCorrupt{target: target, how: how})
		}
	}
	out := map[string]fault{}
	for _, f := range all {
		out[f.name()] = f
	}
	return out
}

// TestFaultCatalog: every fault has a name of its own.
func TestFaultCatalog(t *testing.T) {
	fs := harnessFaults()
	if len(fs) != 21 {
		t.Fatalf("%d faults, want 21", len(fs))
	}
	for name, f := range fs {
		if f.name() != name {
			t.Fatalf("%q is named %q", name, f.name())
		}
	}
}
