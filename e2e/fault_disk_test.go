package e2e

import (
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Full disk: each node's data directory is a 256 MiB tmpfs of its own
// (nodeSetup); inject fills one node's (a follower's or the leader's) with
// a file, heal removes it.

// faultTmpfsMounted records the data directories already mounted, so that
// two disk faults in one run mount each once.
var faultTmpfsMounted sync.Map // data dir -> struct{}

// faultDiskFull fills the data directory of the leader or a follower
// (role "leader" or "follower").
type faultDiskFull struct {
	role   string
	victim int
	filler string
}

func (f *faultDiskFull) name() string { return "disk-full-" + f.role }

func (f *faultDiskFull) setupNode(t *testing.T, c *procCluster, i int) []string {
	dir := c.nodes[i].dataDir
	if _, loaded := faultTmpfsMounted.LoadOrStore(dir, struct{}{}); !loaded {
		mountTmpfs(t, dir, "256m")
		t.Cleanup(func() { faultTmpfsMounted.Delete(dir) })
	}
	return nil
}

// faultSmallTmpfs tells whether dir is on a tmpfs of at most 1 GiB: the
// only place fillDisk may fill.
func faultSmallTmpfs(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	const tmpfsMagic = 0x01021994
	return st.Type == tmpfsMagic && uint64(st.Blocks)*uint64(st.Bsize) <= 1<<30
}

func (f *faultDiskFull) inject(t *testing.T, c *procCluster, rng *rand.Rand) {
	t.Helper()
	f.victim = faultTarget(t, c, rng, f.role)
	dir := c.nodes[f.victim].dataDir
	if !faultSmallTmpfs(dir) {
		t.Fatalf("%s: %s is not a small tmpfs (the fault's nodeSetup was not used): not filling it", f.name(), dir)
	}
	f.filler = fillDisk(t, dir)
	t.Logf("%s: filled node %d's data directory", f.name(), f.victim+1)
}

func (f *faultDiskFull) heal(t *testing.T, c *procCluster) {
	t.Helper()
	if f.filler == "" {
		return
	}
	if err := os.Remove(f.filler); err != nil {
		t.Fatal(err)
	}
	f.filler = ""
}

// faultDiskRun runs a disk fault and then checks that the filled nodes say
// they are ready again.
func faultDiskRun(t *testing.T, role string) {
	c := faultRun(t, &faultDiskFull{role: role}, faultOpts{strict: true, hold: 4 * time.Second})
	for _, bp := range c.nodes {
		waitFor(t, 20*time.Second, "every node ready once space is freed", func() (bool, string) {
			code, body := faultReadyz(bp.adminAddr())
			return code == http.StatusOK, body
		})
	}
}

func TestFaultDiskFullFollower(t *testing.T) { faultDiskRun(t, "follower") }
func TestFaultDiskFullLeader(t *testing.T)   { faultDiskRun(t, "leader") }
