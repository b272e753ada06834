package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// The focused tests of the harness's faults: each runs one fault on its
// own against a three-node procCluster under the idempotent load producer,
// through a few inject/heal rounds, then checks that nothing acknowledged
// was lost (checkHealed) and that every replica ends with the same segment
// bytes. The runner (harness_test.go) combines the same faults with the
// workloads and the checker.

// faultSeed is BROKERD_FAULT_SEED, or a fresh seed; it is logged so that a
// failing run can be replayed.
func faultSeed(t testing.TB) uint64 {
	t.Helper()
	if s := os.Getenv("BROKERD_FAULT_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("BROKERD_FAULT_SEED=%q: %v", s, err)
		}
		t.Logf("seed %d (from BROKERD_FAULT_SEED)", seed)
		return seed
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay with BROKERD_FAULT_SEED=%d)", seed, seed)
	return seed
}

func faultRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// faultNewCluster starts a three-node cluster, giving f's nodeSetup (if
// it has one) each node in turn.
func faultNewCluster(t *testing.T, f fault, extra ...string) *procCluster {
	t.Helper()
	var each func(c *procCluster, i int) []string
	if ns, ok := f.(nodeSetup); ok {
		each = func(c *procCluster, i int) []string { return ns.setupNode(t, c, i) }
	}
	return newProcClusterEach(t, 3, each, extra...)
}

// faultOpts shapes a focused fault test.
type faultOpts struct {
	rounds     int
	hold       time.Duration // how long each fault lasts (plus up to a second, drawn)
	between    time.Duration // how long the cluster runs healed between faults
	rate       float64       // records per second offered
	partitions int32
	strict     bool     // no produce may fail
	extra      []string // arguments for every node
	// during, if set, runs while each fault is in place (after inject,
	// before heal).
	during func(t *testing.T, c *procCluster, round int)
}

func (o *faultOpts) defaults() {
	if o.rounds == 0 {
		o.rounds = 3
	}
	if o.hold == 0 {
		o.hold = 3 * time.Second
	}
	if o.between == 0 {
		o.between = 2 * time.Second
	}
	if o.rate == 0 {
		o.rate = 2000
	}
	if o.partitions == 0 {
		o.partitions = 3
	}
}

// faultRun runs f through o.rounds inject/heal rounds on a fresh cluster
// under load and checks the healed cluster. It returns the cluster for
// further checks.
func faultRun(t *testing.T, f fault, o faultOpts) *procCluster {
	t.Helper()
	matrixTest(t, ciFaults[f.name()])
	o.defaults()
	began := time.Now()
	rng := faultRNG(faultSeed(t))
	c := faultNewCluster(t, f, o.extra...)
	topic := "fault-" + f.name()
	createClusterTopic(t, c, topic, o.partitions)
	lp := startLoad(t, c, topic, o.rate)
	waitFor(t, 30*time.Second, "records acknowledged before the first fault", func() (bool, string) {
		n, _ := lp.ledger.counts()
		return n >= 1000, fmt.Sprint(n)
	})
	for r := 0; r < o.rounds; r++ {
		acked, _ := lp.ledger.counts()
		at := time.Now()
		f.inject(t, c, rng)
		t.Logf("round %d: %s injected in %s", r+1, f.name(), time.Since(at).Round(time.Millisecond))
		if o.during != nil {
			o.during(t, c, r)
		}
		// Note the longest time without a new acknowledgement.
		hold := o.hold + time.Duration(rng.Int64N(int64(time.Second)))
		last, lastN, stall := time.Now(), acked, time.Duration(0)
		for injected := time.Now(); time.Since(injected) < hold; time.Sleep(50 * time.Millisecond) {
			if n, _ := lp.ledger.counts(); n > lastN {
				last, lastN = time.Now(), n
			}
			stall = max(stall, time.Since(last))
		}
		at = time.Now()
		f.heal(t, c)
		during, _ := lp.ledger.counts()
		t.Logf("round %d: healed in %s; %d records acknowledged while the fault lasted, none for %s at most; leader now node %d", r+1,
			time.Since(at).Round(time.Millisecond), during-acked, stall.Round(100*time.Millisecond), c.leader()+1)
		time.Sleep(o.between)
	}
	for _, bp := range c.nodes {
		if !bp.running() {
			t.Fatalf("a node is not running after heal: %v", bp.waitErr)
		}
	}
	lp.stop(t)
	checkHealed(t, c, lp, topic, o.strict)
	faultConverge(t, c, 60*time.Second)
	t.Logf("%s: %d rounds, %s in all", f.name(), o.rounds, time.Since(began).Round(time.Millisecond))
	return c
}

// faultConverge waits until every node's segment files match.
func faultConverge(t *testing.T, c *procCluster, within time.Duration) {
	t.Helper()
	waitFor(t, within, "every replica's segments to match", func() (bool, string) {
		var sums []map[string]string
		for _, bp := range c.nodes {
			sums = append(sums, segmentSums(t, bp.dataDir))
		}
		a := fmt.Sprint(sums[0])
		for i := 1; i < len(sums); i++ {
			if fmt.Sprint(sums[i]) != a {
				return false, faultSumDiff(sums[0], sums[i], i+1)
			}
		}
		return len(sums[0]) > 0, fmt.Sprintf("%d files", len(sums[0]))
	})
}

// faultSumDiff names the first files in which node n differs from node 1.
func faultSumDiff(a, b map[string]string, n int) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: node 1 %q, node %d %q", k, v, n, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: only node %d has it (%s)", k, n, v))
		}
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("... %d more", len(out)-4))
	}
	return fmt.Sprint(out)
}

// faultFollower picks a running follower of the current leader with rng.
func faultFollower(t *testing.T, c *procCluster, rng *rand.Rand) int {
	t.Helper()
	l := c.waitLeader(30 * time.Second)
	var fs []int
	for i, bp := range c.nodes {
		if i != l && bp.running() {
			fs = append(fs, i)
		}
	}
	if len(fs) == 0 {
		t.Fatal("no running follower")
	}
	return fs[rng.IntN(len(fs))]
}

// faultTarget picks the leader (role "leader") or a follower.
func faultTarget(t *testing.T, c *procCluster, rng *rand.Rand, role string) int {
	t.Helper()
	switch role {
	case "leader":
		return c.waitLeader(30 * time.Second)
	case "follower":
		return faultFollower(t, c, rng)
	}
	t.Fatalf("unknown role %q", role)
	return -1
}
