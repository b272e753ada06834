package e2e

import (
	"testing"
	"time"
)

// The whole fault matrix is every harness scenario and every focused
// fault test. CI (test.sh) runs a representative subset; the whole matrix
// runs with
//
//	BROKERD_HARNESS_FULL=1 go test ./e2e -run 'TestHarness|TestFault' -timeout 3h
//
// Both drive brokerd processes, so the race detector, which sees only the
// test's own clients, adds time and finds nothing there: they run in the
// plain go test pass only.

// ciFaults are the focused fault tests (faultRun) in the CI subset: one
// network partition, and the checks of damaged files at start-up.
var ciFaults = map[string]bool{
	"net-isolate-leader-blackhole": true,
	"corrupt-state-truncate":       true,
	"corrupt-segment-truncate":     true,
	"corrupt-segment-flip":         true,
	"powercut-all":                 true,
}

// matrixTest skips a process-level fault test where it does not run: with
// -short, under the race detector, and outside the whole matrix unless it
// is in the subset.
func matrixTest(t *testing.T, subset bool) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("fault test (-short)")
	case raceEnabled:
		t.Skip("process-level fault test: runs in the pass without -race")
	case !subset && !harnessFull():
		t.Skip("whole-matrix fault test: BROKERD_HARNESS_FULL=1 runs it")
	}
}

// The harness scenarios drawn from the fault catalog (fault_*_test.go):
// one per kind of fault, and one that mixes them.
func init() {
	fs := harnessFaults()
	pick := func(names ...string) []fault {
		var out []fault
		for _, n := range names {
			f, ok := fs[n]
			if !ok {
				panic("harness scenario names an unknown fault " + n)
			}
			out = append(out, f)
		}
		return out
	}
	extraScenarios = append(extraScenarios,
		scenario{
			name: "partition-leader", faults: pick("net-isolate-leader-blackhole", "net-isolate-leader-refuse"),
			duration: 45 * time.Second, fullDuration: 4 * time.Minute, subset: true,
			// Room between partitions for the copiers' transactions: each
			// partition costs a client seconds of timeouts and an election.
			quiet: [2]time.Duration{5 * time.Second, 8 * time.Second}, hold: [2]time.Duration{2 * time.Second, 4 * time.Second},
			checks: "the leader cut off from both followers (packets dropped, or connections refused) and healed: a new leader takes over, nothing acknowledged is lost, transactions commit or abort whole, offsets never go back",
		},
		scenario{
			name: "partition-links", faults: pick("net-link-oneway-blackhole", "net-link-both-refuse", "net-isolate-follower-blackhole"),
			duration: 40 * time.Second, fullDuration: 4 * time.Minute,
			checks: "one raft link cut in one direction or both, and a follower isolated",
		},
		scenario{
			name: "kill-follower-all", faults: pick("kill-follower", "kill-all"),
			duration: 40 * time.Second, fullDuration: 4 * time.Minute,
			checks: "SIGKILL of a follower, and of all three nodes at once, then restarts",
		},
		scenario{
			name: "pause", faults: pick("pause-leader", "pause-follower"),
			duration: 40 * time.Second, fullDuration: 4 * time.Minute,
			checks: "SIGSTOP of the leader or a follower for seconds, then SIGCONT: a paused leader that wakes up after an election must not acknowledge anything",
		},
		scenario{
			name: "disk-full", faults: pick("disk-full-follower", "disk-full-leader"),
			duration: 40 * time.Second, fullDuration: 4 * time.Minute,
			checks: "a follower's disk, then the leader's, filled and freed: writes refused with KAFKA_STORAGE_ERROR and retried, leadership handed off, nothing lost",
		},
		scenario{
			name: "mixed", faults: pick("kill-leader", "kill-follower", "pause-leader", "net-isolate-leader-blackhole", "net-link-both-refuse", "disk-full-follower"),
			duration: 60 * time.Second, fullDuration: 8 * time.Minute,
			checks: "process, network and disk faults drawn one after another from the seed",
		},
	)
}
