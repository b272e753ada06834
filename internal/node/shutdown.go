package node

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Shutdown stops the node in an order that loses nothing: /readyz turns
// unready, the group coordinator stops (members waiting in a rebalance are
// told COORDINATOR_NOT_AVAILABLE and look for the next one), the Kafka
// listener stops accepting and lets the requests in flight finish (bounded
// by ctx; past it their connections are closed and clients retry), raft
// leadership moves to another voter if this node
// leads a group of several, the admin listener closes, and raft stops and
// the FSM checkpoints (fsync). Requests cut off at the deadline are only
// logged: what raft committed is durable either way. The error reports a
// failure to stop raft or to checkpoint. Later calls return the first
// call's result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	n.draining.Store(true)
	if n.bgCancel != nil {
		n.bgCancel()
	}
	start := time.Now()
	n.broker.Close()
	conns := n.kafka.ConnCount()
	if err := n.kafka.Shutdown(ctx); err != nil {
		n.logger.Warn("shutdown: requests in flight did not finish in time; their connections were closed", "err", err)
	} else {
		n.logger.Info("shutdown: kafka listener drained", "connections", conns, "took", time.Since(start).Round(time.Millisecond).String())
	}
	n.transferLeadership(ctx)
	var errs []error
	if n.admin != nil {
		if err := n.admin.Shutdown(ctx); err != nil {
			_ = n.admin.Close()
		}
	}
	if err := n.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("raft store: %w", err))
	}
	return errors.Join(errs...)
}

// leadershipTransferer is a raft store that can hand its leadership to
// another voter before it stops. raftstore.Store does not offer it yet;
// once it does, shutdown uses it with no change here.
type leadershipTransferer interface {
	TransferLeadership(ctx context.Context) error
}

// transferLeadership moves raft leadership off this node when it leads a
// group with other voters, so clients find a new leader at once instead of
// after an election timeout. A one-node group has no one to hand over to.
func (n *Node) transferLeadership(ctx context.Context) {
	if !n.store.IsLeader() {
		return
	}
	if p := n.store.Stats()["num_peers"]; p == "" || p == "0" {
		return
	}
	t, ok := any(n.store).(leadershipTransferer)
	if !ok {
		n.logger.Warn("shutdown: this node leads raft but the store cannot transfer leadership; the followers elect a leader after their election timeout")
		return
	}
	start := time.Now()
	if err := t.TransferLeadership(ctx); err != nil {
		n.logger.Warn("shutdown: raft leadership transfer failed", "err", err)
		return
	}
	n.logger.Info("shutdown: raft leadership transferred", "took", time.Since(start).Round(time.Millisecond).String())
}
