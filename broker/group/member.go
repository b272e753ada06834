package group

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// member is one member of a group.
type member struct {
	id               string
	instanceID       *string // nil for a dynamic member
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []Protocol
	assignment       []byte
	// seq orders members by when they first joined: the leader is chosen,
	// and lists are written, in this order.
	seq uint64
	// joinCh and syncCh hold the answer channel of a JoinGroup or SyncGroup
	// that waits on the rebalance; nil when none waits. A member with a
	// waiting request is never expired by its session timeout: the
	// rebalance timeout bounds the wait instead.
	joinCh chan JoinResult
	syncCh chan SyncResult
	// deadline is when the session expires without a heartbeat.
	deadline time.Time
}

func (m *member) awaitingJoin() bool { return m.joinCh != nil }
func (m *member) awaitingSync() bool { return m.syncCh != nil }

// answerJoin delivers r to the waiting JoinGroup, if any. Every channel
// receives at most one answer; a second one would be a bug, and is dropped
// (and counted) rather than block the coordinator.
func (m *member) answerJoin(r JoinResult) {
	if m.joinCh != nil {
		deliver(m.joinCh, r)
		m.joinCh = nil
	}
}

// answerSync delivers r to the waiting SyncGroup, if any.
func (m *member) answerSync(r SyncResult) {
	if m.syncCh != nil {
		deliver(m.syncCh, r)
		m.syncCh = nil
	}
}

// doubleAnswers counts answers dropped because their channel already held
// one (always zero unless there is a bug; the fuzz test checks it).
var doubleAnswers atomic.Int64

// deliver sends v on a one-slot channel without ever blocking.
func deliver[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
		doubleAnswers.Add(1)
	}
}

// awaitJoin makes ch the member's waiting JoinGroup. A request it replaces
// (the client gave up on it and sent another) is answered
// REBALANCE_IN_PROGRESS.
func (m *member) awaitJoin(ch chan JoinResult) {
	m.answerJoin(JoinResult{Err: kerr.RebalanceInProgress, MemberID: m.id, Generation: -1})
	m.joinCh = ch
}

// awaitSync is awaitJoin for SyncGroup.
func (m *member) awaitSync(ch chan SyncResult) {
	m.answerSync(SyncResult{Err: kerr.RebalanceInProgress})
	m.syncCh = ch
}

// update takes the settings of a new JoinGroup from this member.
func (m *member) update(now time.Time, req *JoinRequest) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.protocols = req.Protocols
	m.deadline = now.Add(m.sessionTimeout)
}

// matches reports whether protocols are the member's current ones, in the
// same order with the same metadata.
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// metadata returns the member's metadata for the named protocol.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return true
		}
	}
	return false
}

// heartbeat pushes the session deadline out.
func (m *member) heartbeat(now time.Time) { m.deadline = now.Add(m.sessionTimeout) }
