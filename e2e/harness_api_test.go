package e2e

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// The fault harness (docs/RELIABILITY.md). Workloads drive real Kafka
// clients against a cluster of brokerd processes (procCluster) and record
// what they asked and what they were told in a history; faults are
// injected and healed meanwhile on a schedule drawn from a printed seed;
// once everything is healed, a checker reads the history and names every
// anomaly it finds. This file is the contract between the three parts:
// history and checker (history_test.go, checker_test.go), workloads
// (workload_*_test.go) and faults (fault_*_test.go), and the runner that
// puts them together (harness_test.go).

// evType is the kind of a history event: an operation is invoked, then
// ends ok, failed (it certainly did not happen), or info (it may or may
// not have happened: a timeout, a lost connection).
type evType int

const (
	evInvoke evType = iota
	evOK
	evFail
	evInfo
)

func (t evType) String() string {
	return [...]string{"invoke", "ok", "fail", "info"}[t]
}

// Operations a workload records.
const (
	opSend   = "send"   // produce one value; ok carries its offset
	opPoll   = "poll"   // one poll: the values and offsets it returned, per partition
	opTxn    = "txn"    // a transaction: the values it wrote, and whether it committed
	opCommit = "commit" // a consumer group offset commit
	opFetch  = "fetch"  // a committed-offset fetch (what the group's offsets read back)
)

// event is one line of a history. An invoke and its completion share
// Process and ID; the completion repeats what it learned.
type event struct {
	Time      time.Time
	Process   int    // the workload client that ran the operation
	ID        int64  // the operation, unique within Process
	Type      evType //
	Op        string // opSend, opPoll, ...
	Topic     string
	Partition int32
	// Offset is the offset a send was acknowledged at, or a committed
	// offset; -1 when unknown.
	Offset int64
	// Values and Offsets are what a poll read, in order (Offsets[i] is the
	// offset of Values[i]), or the values a send or txn wrote.
	Values  []string
	Offsets []int64
	// Committed is true for a transaction that committed, false for one
	// that aborted (on its ok event).
	Committed bool
	// ReadCommitted marks polls made at isolation level read_committed.
	ReadCommitted bool
	Err           string
}

// history is a concurrent, append-only list of events.
type history struct {
	mu     sync.Mutex
	events []event
}

func (h *history) add(e event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *history) all() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.events...)
}

// workload runs Kafka clients against a cluster and records a history.
type workload interface {
	name() string
	// start begins the workload; it runs until stop. process numbers are
	// the workload's own, from first on.
	start(t *testing.T, c *procCluster, h *history, first int)
	// stop ends the workload and waits until every operation it invoked
	// has completed (ok, fail or info).
	stop(t *testing.T)
	// final runs after the cluster has healed: a last read of everything,
	// recorded in h like any poll, so that the checker can tell lost
	// writes from writes nobody read.
	final(t *testing.T, c *procCluster, h *history)
}

// fault is one kind of failure the harness injects.
type fault interface {
	name() string
	// inject starts the fault on c, drawing its target from rng; heal ends
	// it and returns once the cluster can recover by itself (the process
	// is running again, the link is whole). The runner alternates them.
	inject(t *testing.T, c *procCluster, rng *rand.Rand)
	heal(t *testing.T, c *procCluster)
}

// nodeSetup is implemented by faults that must prepare each node before
// the cluster starts: node i gets the returned extra command-line
// arguments (a raft dial override through a proxy, say), and may have its
// data directory mounted elsewhere (a FUSE filesystem, a small tmpfs).
type nodeSetup interface {
	setupNode(t *testing.T, c *procCluster, i int) []string
}
