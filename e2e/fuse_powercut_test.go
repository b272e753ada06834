package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// powercutFault cuts the power of one node or of all three: each node's
// data directory is a powercutFS mount (setupNode); inject SIGKILLs the
// target nodes and at once reverts their filesystems to what had been
// made durable (fsync), and heal starts them again on what is left.
type powercutFault struct {
	// target is "follower", "leader", "all" or "any" (one node drawn at
	// random).
	target string
	fss    map[int]*powercutFS
	down   []int
}

var (
	_ fault     = (*powercutFault)(nil)
	_ nodeSetup = (*powercutFault)(nil)
)

func newPowercutFault(target string) *powercutFault {
	return &powercutFault{target: target, fss: map[int]*powercutFS{}}
}

func (f *powercutFault) name() string { return "powercut-" + f.target }

// setupNode mounts a powercutFS over node i's data directory, its durable
// state kept beside it. It skips the test where FUSE cannot be mounted.
func (f *powercutFault) setupNode(t *testing.T, c *procCluster, i int) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("powercutfs mounts FUSE directly: needs root")
	}
	bp := c.nodes[i]
	p, err := newPowercutFS(bp.dataDir, filepath.Join(filepath.Dir(bp.dataDir), "powercut-backing"))
	if err != nil {
		t.Skipf("cannot mount FUSE: %v", err)
	}
	f.fss[i] = p
	// Runs before the process's own cleanup: the mount must outlive it.
	t.Cleanup(func() {
		if bp.running() {
			bp.cmd.Process.Kill()
			<-bp.exited
		}
		t.Logf("node %d powercutfs: %s", i+1, p.stats())
		if err := p.unmount(); err != nil {
			t.Errorf("node %d: %v", i+1, err)
		}
	})
	return nil
}

func (f *powercutFault) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	f.down = nil
	switch f.target {
	case "all":
		for i, bp := range c.nodes {
			if bp.running() {
				f.down = append(f.down, i)
			}
		}
	case "leader":
		f.down = []int{c.waitLeader(30 * time.Second)}
	case "follower":
		l := c.waitLeader(30 * time.Second)
		f.down = []int{(l + 1 + rng.IntN(len(c.nodes)-1)) % len(c.nodes)}
	default:
		f.down = []int{rng.IntN(len(c.nodes))}
	}
	for _, i := range f.down {
		if c.nodes[i].running() {
			c.nodes[i].kill()
		}
	}
	for _, i := range f.down {
		fmt.Fprintf(c.nodes[i].logFile, "\n===== e2e: power cut at %s =====\n", time.Now().Format(time.RFC3339Nano))
		if err := f.fss[i].cut(); err != nil {
			t.Fatalf("node %d: power cut: %v", i+1, err)
		}
	}
	t.Logf("%s: cut the power of node(s) %v", f.name(), plusOne(f.down))
}

func (f *powercutFault) heal(t *testing.T, c *procCluster) {
	t.Helper()
	for _, i := range f.down {
		c.nodes[i].launch()
	}
	for _, i := range f.down {
		c.nodes[i].waitReady(60 * time.Second)
	}
	f.down = nil
}

func plusOne(ns []int) []int {
	out := make([]int, len(ns))
	for i, n := range ns {
		out[i] = n + 1
	}
	return out
}

// runPowercut runs rounds of f under an idempotent acks=all load on a
// three-node cluster whose data directories are powercutFS mounts, then
// checks that every acknowledged record is there once, at its offset, and
// that every replica ends with the same segment bytes.
func runPowercut(t *testing.T, f *powercutFault, rounds int, strict bool) {
	matrixTest(t, ciFaults[f.name()])
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	c := newProcClusterEach(t, 3, func(c *procCluster, i int) []string {
		return f.setupNode(t, c, i)
	})
	topic := f.name()
	createClusterTopic(t, c, topic, 3)
	lp := startLoad(t, c, topic, 2000)
	for r := 0; r < rounds; r++ {
		before, _ := lp.ledger.counts()
		waitFor(t, 30*time.Second, "records acknowledged before the cut", func() (bool, string) {
			n, _ := lp.ledger.counts()
			return n >= before+3000, fmt.Sprint(n)
		})
		f.inject(t, c, rng)
		time.Sleep(500 * time.Millisecond)
		f.heal(t, c)
	}
	after, _ := lp.ledger.counts()
	waitFor(t, 60*time.Second, "records acknowledged after the last cut", func() (bool, string) {
		n, _ := lp.ledger.counts()
		return n >= after+2000, fmt.Sprint(n)
	})
	lp.stop(t)
	checkHealed(t, c, lp, topic, strict)
	faultConverge(t, c, 60*time.Second)
}

// TestFaultPowerCutFollower: cut a follower's power twice under load:
// nothing acknowledged is lost and no produce fails.
func TestFaultPowerCutFollower(t *testing.T) {
	runPowercut(t, newPowercutFault("follower"), 2, true)
}

// TestFaultPowerCutLeader: cut the leader's power twice under load.
func TestFaultPowerCutLeader(t *testing.T) {
	runPowercut(t, newPowercutFault("leader"), 2, false)
}

// TestFaultPowerCutAll: cut the power of all three nodes at once, twice:
// only what each node had fsynced is left, and every acknowledged record
// is there (an ack promises a quorum fsynced it).
func TestFaultPowerCutAll(t *testing.T) {
	runPowercut(t, newPowercutFault("all"), 2, false)
}
