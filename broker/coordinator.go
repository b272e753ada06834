package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/broker/group"
	"github.com/brokerd/brokerd/raftstore"
)

// Kafka's defaults for the group and offset settings of Config.
const (
	defaultGroupInitialRebalanceDelay    = 3 * time.Second
	defaultOffsetsRetention              = 7 * 24 * time.Hour
	defaultOffsetsRetentionCheckInterval = 10 * time.Minute
	defaultOffsetMetadataMaxBytes        = 4096
)

// coordinatorTick is how often the coordinator checks leadership and its
// groups' deadlines (session and rebalance timeouts).
const coordinatorTick = 100 * time.Millisecond

// newCoordinator builds the group coordinator from the broker config.
func newCoordinator(cfg Config, logger *slog.Logger, persist func(string, []byte, func(*kerr.Error))) *group.Coordinator {
	delay := cfg.GroupInitialRebalanceDelay
	switch {
	case delay == 0:
		delay = defaultGroupInitialRebalanceDelay
	case delay < 0:
		delay = 0
	}
	return group.New(group.Config{
		MinSessionTimeout:     cfg.GroupMinSessionTimeout,
		MaxSessionTimeout:     cfg.GroupMaxSessionTimeout,
		InitialRebalanceDelay: delay,
		Persist:               persist,
		Logger:                logger.With("component", "group-coordinator"),
	})
}

// runCoordinator serves groups while this node leads raft: on winning
// leadership it waits until every committed entry is applied (so committed
// offsets and membership records are current), then activates the
// coordinator with the groups the records describe; on losing it, it
// drops all membership. While active it drives the groups' deadlines and,
// every offsets.retention.check.interval.ms, expires the offsets of groups
// that have stayed empty.
func (b *Broker) runCoordinator() {
	defer close(b.coordDone)
	recordsDone := make(chan struct{})
	go func() {
		defer close(recordsDone)
		b.records.run(b.stop)
	}()
	defer func() { <-recordsDone }()
	var expiries sync.WaitGroup
	defer expiries.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before the Wait above
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(coordinatorTick)
	defer t.Stop()
	var (
		leading    bool
		term       int32
		nextExpiry time.Time
		expiring   atomic.Bool
	)
	for {
		now := time.Now()
		isLeader := b.store.IsLeader()
		switch {
		case isLeader && (!leading || b.store.LeaderEpoch() != term):
			b.groups.Load()
			leading = false
			if !b.catchUp(ctx) {
				b.groups.Deactivate()
				break
			}
			term = b.store.LeaderEpoch()
			b.records.setTerm(term)
			leading = true
			nextExpiry = time.Now().Add(b.cfg.OffsetsRetentionCheckInterval)
			b.groups.Activate(b.store.GroupMembersRecords())
		case !isLeader && leading:
			leading = false
			b.groups.Deactivate()
		case leading:
			b.groups.Tick()
			if now.After(nextExpiry) && expiring.CompareAndSwap(false, true) {
				nextExpiry = now.Add(b.cfg.OffsetsRetentionCheckInterval)
				expiries.Add(1)
				go func() {
					defer expiries.Done()
					defer expiring.Store(false)
					b.expireOffsets(ctx)
				}()
			}
		}
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
	}
}

// catchUp waits until this leader has applied everything committed before
// it took over, and reports whether it still leads.
func (b *Broker) catchUp(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.store.WaitLeader(ctx); err != nil {
		b.logger.Warn("group coordinator: catching up with the raft log failed", "err", err)
		return false
	}
	return b.store.IsLeader()
}

// expireOffsets proposes the expiry of offsets older than
// offsets.retention.minutes in groups that have been empty that long
// (KIP-211), then forgets empty groups without offsets.
func (b *Broker) expireOffsets(ctx context.Context) {
	retention := b.cfg.OffsetsRetention
	groups := b.groups.ExpirableGroups(b.store.OffsetGroups(), retention)
	if len(groups) > 0 {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := b.store.ExpireOffsets(ctx, time.Now().UnixMilli(), retention.Milliseconds(), groups)
		cancel()
		if err != nil {
			b.logger.Warn("offset expiry failed", "groups", len(groups), "err", err)
		} else {
			b.logger.Debug("expired offsets of empty groups", "groups", len(groups))
		}
	}
	b.groups.Sweep(b.hasOffsets)
}

// Close stops the group coordinator; call it before the store closes.
// Requests waiting in a rebalance are answered COORDINATOR_NOT_AVAILABLE, and
// later group requests get the same answer.
func (b *Broker) Close() {
	b.closeOnce.Do(func() { close(b.stop) })
	<-b.coordDone
	b.groups.Close()
}

// hasOffsets reports whether a group has committed offsets.
func (b *Broker) hasOffsets(groupID string) bool {
	return len(b.store.GroupOffsets(groupID)) > 0
}

// coordinatorErrorCode maps a failed offset proposal to what a group
// client expects (as Kafka maps failed appends to the offsets topic):
// retriable coordinator errors that make it retry, perhaps elsewhere.
func coordinatorErrorCode(err error) int16 {
	switch {
	case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, raftstore.ErrUnknownOutcome):
		// It may still commit; a retry writes the same offsets again.
		return kerr.CoordinatorNotAvailable.Code
	}
	return errorCode(err)
}

// errCode is the code of a coordinator error, 0 for nil.
func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// clientHost is how Kafka shows a member's address: "/" and the IP.
func clientHost(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	return "/" + host
}

// clientID is the request's client id, "" when null.
func clientID(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}

// millis turns a Kafka millisecond field into a duration.
func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
