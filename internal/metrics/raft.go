package metrics

import (
	"strconv"

	"github.com/brokerd/brokerd/raftstore"

	"github.com/prometheus/client_golang/prometheus"
)

// raftStates are hashicorp/raft's state names, exported one-hot.
var raftStates = []string{"Follower", "Candidate", "Leader", "Shutdown"}

type raftCollector struct {
	s                                      Store
	state, term, commit, applied, lastLog  *prometheus.Desc
	fsmApplied, lag, snapshot, peers, lead *prometheus.Desc
	checkpoint, stall                      *prometheus.Desc
}

func newRaftCollector(s Store) *raftCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "raft", name), help, labels, nil)
	}
	return &raftCollector{
		s:          s,
		state:      d("state", "1 for this node's raft state (Follower, Candidate, Leader, Shutdown), 0 for the others.", "state"),
		term:       d("term", "Current raft term (also the Kafka leader epoch)."),
		commit:     d("commit_index", "Highest raft log index known to be committed."),
		applied:    d("applied_index", "Highest raft log index raft has handed to the FSM."),
		lastLog:    d("last_log_index", "Last index in this node's raft log."),
		fsmApplied: d("fsm_applied_index", "Highest raft log index the FSM has applied (the high watermark's source)."),
		lag:        d("apply_lag", "Committed raft entries the FSM has not applied yet (commit_index - fsm_applied_index)."),
		snapshot:   d("last_snapshot_index", "Raft log index of the latest snapshot."),
		peers:      d("peers", "Other voters in the raft configuration."),
		lead:       d("leader_id", "Node id of the raft leader, -1 when none is known."),
		checkpoint: prometheus.NewDesc(prometheus.BuildFQName(namespace, "fsm", "checkpoint_seconds"),
			"How long the FSM's checkpoints took, from capture to commit (segment fsyncs and the metadata commit); they run beside apply.", nil, nil),
		stall: prometheus.NewDesc(prometheus.BuildFQName(namespace, "fsm", "checkpoint_stall_seconds"),
			"How long applying entries waited on a checkpoint: capturing what changed, or waiting for the checkpoint in flight.", nil, nil),
	}
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.term, c.commit, c.applied, c.lastLog,
		c.fsmApplied, c.lag, c.snapshot, c.peers, c.lead, c.checkpoint, c.stall} {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	fsm := c.s.AppliedIndex()
	num := func(k string) uint64 {
		n, _ := strconv.ParseUint(st[k], 10, 64)
		return n
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range raftStates {
		v := 0.0
		if st["state"] == s {
			v = 1
		}
		g(c.state, v, s)
	}
	commit := num("commit_index")
	g(c.term, float64(num("term")))
	g(c.commit, float64(commit))
	g(c.applied, float64(num("applied_index")))
	g(c.lastLog, float64(num("last_log_index")))
	g(c.fsmApplied, float64(fsm))
	lag := 0.0
	if commit > fsm {
		lag = float64(commit - fsm)
	}
	g(c.lag, lag)
	g(c.snapshot, float64(num("last_snapshot_index")))
	g(c.peers, float64(num("num_peers")))
	leader := -1.0
	if id, ok := c.s.Leader(); ok {
		leader = float64(id)
	}
	g(c.lead, leader)
	cs := c.s.CheckpointStats()
	hist := func(d *prometheus.Desc, h raftstore.DurationStats) {
		buckets := make(map[float64]uint64, len(raftstore.CheckpointBuckets))
		for i, b := range raftstore.CheckpointBuckets {
			buckets[b] = h.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets)
	}
	hist(c.checkpoint, cs.DurationStats)
	hist(c.stall, cs.Stall)
}
