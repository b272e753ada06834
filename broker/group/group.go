package group

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a group's state, with Kafka's names.
type State int8

// The states of a classic group.
const (
	// Empty has no members; it may have committed offsets.
	Empty State = iota
	// PreparingRebalance waits for the members to (re)join.
	PreparingRebalance
	// CompletingRebalance waits for the leader's assignment (SyncGroup).
	CompletingRebalance
	// Stable has a generation and an assignment.
	Stable
	// Dead is a group being deleted.
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// group is one group's membership state machine. Its methods run under the
// coordinator's lock and never block.
type group struct {
	cfg    *Config
	logger *slog.Logger

	id           string
	state        State
	generation   int32
	protocolType string // set by the first member to join an empty group
	protocol     string // the chosen protocol of the generation; "" if none
	leader       string
	members      map[string]*member
	static       map[string]string    // instance id -> member id
	pending      map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED -> expiry
	nextSeq      uint64

	// PreparingRebalance: the join completes when every member has rejoined
	// or at joinDeadline. From Empty with an initial delay, it completes
	// at delayUntil instead, extended (by up to delayLeft in total) while new
	// members keep arriving.
	joinDeadline   time.Time
	delayUntil     time.Time
	delayLeft      time.Duration
	newMemberAdded bool

	// CompletingRebalance and Stable: members of the generation that have
	// not sent SyncGroup yet, and when they are given up on.
	pendingSync  map[string]bool
	syncDeadline time.Time

	// emptySince is when the group last became Empty (offset expiry).
	emptySince time.Time

	// store writes the group's membership record, or deletes it (gone);
	// then runs once that is durable or failed (Coordinator.persist).
	// storing is set while the record of a completed rebalance is being
	// written: the members learn their assignments only once it is.
	store   func(gone bool, then func(now time.Time, err *kerr.Error))
	storing bool
	// durableGen is the newest generation whose record is durable: only
	// its members may commit offsets, so that no generation anyone
	// committed in is handed out again by a coordinator that takes over.
	durableGen int32
	// recordStale is set when a record that needs no answer (the group
	// emptied, a static member's new id) failed to be written; Tick
	// writes the group's record again from retryAt on.
	recordStale bool
	retryAt     time.Time
}

func newGroup(cfg *Config, id string, now time.Time) *group {
	return &group{
		cfg:         cfg,
		logger:      cfg.Logger.With("group", id),
		id:          id,
		members:     map[string]*member{},
		static:      map[string]string{},
		pending:     map[string]time.Time{},
		pendingSync: map[string]bool{},
		emptySince:  now,
	}
}

// sortedMembers lists the members in join order.
func (g *group) sortedMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// rebalanceTimeout is the longest rebalance timeout of any member.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// fenced reports whether instanceID names a static member whose current
// member id is not memberID: the caller is a stale incarnation.
func (g *group) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// add makes m a member. The first member of an empty group sets its
// protocol type.
func (g *group) add(m *member, protocolType string) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	m.seq = g.nextSeq
	g.nextSeq++
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

// remove drops a member, answering any request of its that waits with
// code (the leaving member's JoinGroup learns to start over).
func (g *group) remove(id string, code *kerr.Error) {
	m := g.members[id]
	if m == nil {
		return
	}
	m.answerJoin(JoinResult{Err: code, Generation: -1})
	m.answerSync(SyncResult{Err: code})
	delete(g.members, id)
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	g.dropPendingSync(id)
	if g.leader == id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// dropPendingSync notes that a member no longer owes a SyncGroup.
func (g *group) dropPendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

// memberMetadata lists every member's metadata for the chosen protocol,
// for the leader.
func (g *group) memberMetadata() []MemberMetadata {
	ms := g.sortedMembers()
	out := make([]MemberMetadata, 0, len(ms))
	for _, m := range ms {
		out = append(out, MemberMetadata{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.protocol)})
	}
	return out
}

// currentJoin is the JoinGroup answer that tells m the current generation.
func (g *group) currentJoin(m *member, withMembers bool) JoinResult {
	r := JoinResult{
		MemberID:     m.id,
		Generation:   g.generation,
		ProtocolType: strPtr(g.protocolType),
		Protocol:     strPtr(g.protocol),
		LeaderID:     g.leader,
	}
	if withMembers {
		r.Members = g.memberMetadata()
	}
	return r
}

func strPtr(s string) *string { return &s }
