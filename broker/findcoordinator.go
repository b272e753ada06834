package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

// Coordinator key types of FindCoordinator.
const (
	coordinatorTypeGroup       = 0
	coordinatorTypeTransaction = 1
)

// coordinatorAnswer is one key's answer.
type coordinatorAnswer struct {
	code    int16
	message *string
	node    raftstore.BrokerInfo
}

// findCoordinator answers FindCoordinator, one key (v0-v3) or a batch
// (v4+). Any broker answers it: the group coordinator is the raft leader,
// so the answer is the leader, or COORDINATOR_NOT_AVAILABLE while there is
// none (clients retry).
func (b *Broker) findCoordinator(listener string, r *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	if r.Version < 4 {
		a := b.coordinatorFor(listener, r.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage = a.code, a.message
		resp.NodeID, resp.Host, resp.Port = a.node.NodeID, a.node.Host, a.node.Port
		return resp
	}
	for _, key := range r.CoordinatorKeys {
		a := b.coordinatorFor(listener, r.CoordinatorType)
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.ErrorCode, c.ErrorMessage = a.code, a.message
		c.NodeID, c.Host, c.Port = a.node.NodeID, a.node.Host, a.node.Port
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// coordinatorFor finds the coordinator for a key type. Every group maps to
// the raft leader, so the key itself does not matter. The address is the
// leader's on the request's listener.
func (b *Broker) coordinatorFor(listener string, keyType int8) coordinatorAnswer {
	none := raftstore.BrokerInfo{NodeID: -1, Port: -1}
	fail := func(e *kerr.Error, msg string) coordinatorAnswer {
		return coordinatorAnswer{code: e.Code, message: &msg, node: none}
	}
	switch keyType {
	case coordinatorTypeGroup, coordinatorTypeTransaction:
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator type in FindCoordinator request")
	}
	leader, ok := b.store.Leader()
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "no raft leader is known")
	}
	for _, br := range b.brokersOn(listener) {
		if br.NodeID == leader {
			return coordinatorAnswer{node: br}
		}
	}
	return fail(kerr.CoordinatorNotAvailable, "the raft leader has not registered its address yet")
}
