package group

import (
	"bytes"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// status is whether the coordinator serves groups.
type status int8

const (
	// inactive: this node is not the raft leader (NOT_COORDINATOR).
	inactive status = iota
	// loading: the leader is catching up with committed state
	// (COORDINATOR_LOAD_IN_PROGRESS).
	loading
	// active: serving.
	active
	// closed: shutting down (COORDINATOR_NOT_AVAILABLE).
	closed
)

// Coordinator holds every group this node coordinates. One lock guards it
// all: group operations are short and never block, and the waits of
// JoinGroup and SyncGroup happen outside it, on their channels.
type Coordinator struct {
	cfg    Config
	logger *slog.Logger

	mu          sync.Mutex
	status      status
	groups      map[string]*group
	activeSince time.Time
	// epoch counts the times the coordinator dropped its groups: a
	// record write that completes after one is of no group it serves.
	epoch uint64
}

// New returns an inactive Coordinator.
func New(cfg Config) *Coordinator {
	cfg = cfg.withDefaults()
	return &Coordinator{cfg: cfg, logger: cfg.Logger, groups: map[string]*group{}}
}

// Load marks the coordinator as catching up (this node just became the
// leader): group requests get COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) Load() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != closed {
		c.dropAll(kerr.CoordinatorLoadInProgress)
		c.status = loading
	}
}

// Activate starts serving the groups of the membership records (group
// id -> record, as Persist wrote them): each is Stable with its members,
// whose sessions start now, or Empty. A record that cannot be read is
// logged and skipped: that group's members rejoin.
func (c *Coordinator) Activate(records map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == closed {
		return
	}
	c.dropAll(kerr.NotCoordinator)
	c.status = active
	now := c.cfg.Clock.Now()
	c.activeSince = now
	for id, data := range records {
		g, err := restoreGroup(&c.cfg, id, data, now)
		if err != nil {
			c.logger.Warn("group membership not restored; its members rejoin", "group", id, "err", err)
		}
		if g != nil {
			c.adopt(g)
		}
	}
	c.logger.Info("group coordinator active", "groups", len(c.groups))
}

// adopt makes g one of the coordinator's groups.
func (c *Coordinator) adopt(g *group) {
	g.store = func(gone bool, then func(time.Time, *kerr.Error)) { c.persist(g, gone, then) }
	c.groups[g.id] = g
}

// Deactivate drops every group (leadership moved): waiting requests are
// answered NOT_COORDINATOR and clients find the new coordinator.
func (c *Coordinator) Deactivate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == closed {
		return
	}
	if c.status == active {
		c.logger.Info("group coordinator inactive, dropping groups", "groups", len(c.groups))
	}
	c.dropAll(kerr.NotCoordinator)
	c.status = inactive
}

// Close stops the coordinator for good.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropAll(kerr.CoordinatorNotAvailable)
	c.status = closed
}

// Active reports whether the coordinator serves groups.
func (c *Coordinator) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status == active
}

// dropAll forgets every group, answering waiting requests with code.
func (c *Coordinator) dropAll(code *kerr.Error) {
	c.epoch++
	for _, g := range c.groups {
		for _, m := range g.members {
			m.answerJoin(JoinResult{Err: code, MemberID: m.id, Generation: -1})
			m.answerSync(SyncResult{Err: code})
		}
	}
	c.groups = map[string]*group{}
}

// statusErr is the error every group request gets unless the coordinator
// is active.
func (c *Coordinator) statusErr() *kerr.Error {
	switch c.status {
	case active:
		return nil
	case loading:
		return kerr.CoordinatorLoadInProgress
	case closed:
		return kerr.CoordinatorNotAvailable
	default:
		return kerr.NotCoordinator
	}
}

// Status is the error a request about groups gets before it is looked at:
// nil when the coordinator is active.
func (c *Coordinator) Status() *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statusErr()
}

// Join runs a JoinGroup. The channel receives the one answer: at once, or
// when the rebalance completes (bounded by the rebalance timeout).
func (c *Coordinator) Join(req JoinRequest) <-chan JoinResult {
	ch := make(chan JoinResult, 1)
	fail := func(code *kerr.Error) <-chan JoinResult {
		deliver(ch, JoinResult{Err: code, MemberID: req.MemberID, Generation: -1})
		return ch
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout
	}
	// Byte fields may alias the request frame: keep copies.
	req.Protocols = slices.Clone(req.Protocols)
	for i := range req.Protocols {
		req.Protocols[i].Metadata = bytes.Clone(req.Protocols[i].Metadata)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return fail(err)
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout)
	}
	now := c.cfg.Clock.Now()
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return fail(kerr.UnknownMemberID)
		}
		g = newGroup(&c.cfg, req.Group, now)
		c.adopt(g)
	}
	g.join(now, &req, ch)
	c.forgetIfUnused(g)
	return ch
}

// forgetIfUnused drops a group that a failed first join left with nothing
// in it.
func (c *Coordinator) forgetIfUnused(g *group) {
	if g.state == Empty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 {
		delete(c.groups, g.id)
	}
}

// Sync runs a SyncGroup. The channel receives the one answer: at once, or
// when the leader's assignment arrives.
func (c *Coordinator) Sync(req SyncRequest) <-chan SyncResult {
	ch := make(chan SyncResult, 1)
	fail := func(code *kerr.Error) <-chan SyncResult {
		deliver(ch, SyncResult{Err: code})
		return ch
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	req.Assignments = slices.Clone(req.Assignments)
	for i := range req.Assignments {
		req.Assignments[i].Assignment = bytes.Clone(req.Assignments[i].Assignment)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return fail(err)
	}
	g := c.groups[req.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	g.sync(c.cfg.Clock.Now(), &req, ch)
	return ch
}

// Heartbeat runs a Heartbeat.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return err
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	return g.heartbeat(c.cfg.Clock.Now(), &req)
}

// Leave runs a LeaveGroup: a group-wide error, or one error (or nil) per
// member.
func (c *Coordinator) Leave(groupID string, members []LeavingMember) (*kerr.Error, []*kerr.Error) {
	if groupID == "" {
		return kerr.InvalidGroupID, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return err, nil
	}
	g := c.groups[groupID]
	if g == nil {
		out := make([]*kerr.Error, len(members))
		for i := range out {
			out[i] = kerr.UnknownMemberID
		}
		return nil, out
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable, nil
	}
	return nil, g.leave(c.cfg.Clock.Now(), members)
}

// Tick acts on every deadline that has passed: session and rebalance
// timeouts, the initial rebalance delay, SyncGroups that never came. The
// broker calls it often (every 100ms); tests call it after moving their
// clock.
func (c *Coordinator) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != active {
		return
	}
	now := c.cfg.Clock.Now()
	for _, g := range c.groups {
		g.tick(now)
	}
}
