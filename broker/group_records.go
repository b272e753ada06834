package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/raftstore"
)

// groupRecords writes the group coordinator's membership records through
// raft (group.Config.Persist). Per group, records go out in the order they
// were given, so the last one wins on every replica. A record given while
// an older one of its group still waits replaces it (both callers hear the
// outcome of the one write), so at most one record per group waits, and
// the waiting bytes are bounded besides. Records of several groups go out
// together, up to raftstore.MaxGroupMembersBatch bytes per raft entry.
type groupRecords struct {
	store  *raftstore.Store
	logger *slog.Logger
	// term is the raft term of the coordinator's current leadership
	// (setTerm, before it activates): records carry the term they were
	// written in, and raft refuses them in an entry of another.
	term atomic.Int32

	mu      sync.Mutex
	order   []string // groups with a waiting record, oldest first
	waiting map[string]*waitingRecord
	bytes   int
	stopped bool // run has returned: records fail at once
	wake    chan struct{}
}

type waitingRecord struct {
	term  int32
	data  []byte // nil: delete
	dones []func(*kerr.Error)
}

const (
	// groupRecordsWaiting bounds the bytes of records waiting to be
	// written; a record past it fails at once (COORDINATOR_NOT_AVAILABLE:
	// its group's members retry).
	groupRecordsWaiting = 64 << 20
	// groupRecordsTimeout bounds one write, as Kafka's
	// offsets.commit.timeout.ms (5 s) bounds its coordinator's; a write
	// that times out fails its rebalance, whose members rejoin.
	groupRecordsTimeout = 5 * time.Second
)

func newGroupRecords(store *raftstore.Store, logger *slog.Logger) *groupRecords {
	return &groupRecords{store: store, logger: logger, waiting: map[string]*waitingRecord{}, wake: make(chan struct{}, 1)}
}

// setTerm is called by the coordinator's loop when it activates for a
// leadership of this term, before any record of it is given.
func (w *groupRecords) setTerm(term int32) { w.term.Store(term) }

// persist queues a record; done runs on another goroutine, never before
// persist returns.
func (w *groupRecords) persist(group string, data []byte, done func(*kerr.Error)) {
	if len(data) > raftstore.MaxGroupMembersBytes {
		// Too large to ever be written: only this group's rebalance
		// fails (UNKNOWN_SERVER_ERROR, as Kafka answers a group whose
		// metadata exceeds the offsets topic's largest message).
		w.logger.Warn("group membership record too large", "group", group, "bytes", len(data), "max", raftstore.MaxGroupMembersBytes)
		go done(kerr.UnknownServerError)
		return
	}
	term := w.term.Load()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		go done(kerr.CoordinatorNotAvailable)
		return
	}
	if r := w.waiting[group]; r != nil {
		if r.term != term {
			// From an earlier leadership: it would be refused.
			for _, d := range r.dones {
				go d(kerr.NotCoordinator)
			}
			r.dones = nil
		}
		w.bytes += len(data) - len(r.data)
		r.term, r.data = term, data
		r.dones = append(r.dones, done)
	} else if w.bytes+len(data) > groupRecordsWaiting {
		w.mu.Unlock()
		w.logger.Warn("too many group membership bytes waiting to be written", "group", group, "waiting_bytes", w.bytes)
		go done(kerr.CoordinatorNotAvailable)
		return
	} else {
		w.waiting[group] = &waitingRecord{term: term, data: data, dones: []func(*kerr.Error){done}}
		w.order = append(w.order, group)
		w.bytes += len(data)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes waiting records until stop closes, then fails what is left.
func (w *groupRecords) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-stop:
			w.mu.Lock()
			left := w.waiting
			w.order, w.waiting, w.bytes, w.stopped = nil, map[string]*waitingRecord{}, 0, true
			w.mu.Unlock()
			for _, r := range left {
				for _, d := range r.dones {
					d(kerr.CoordinatorNotAvailable)
				}
			}
			return
		case <-w.wake:
		}
		for ctx.Err() == nil && w.writeBatch(ctx) {
		}
	}
}

// writeBatch writes the oldest waiting records of one term, and reports
// whether there were any.
func (w *groupRecords) writeBatch(ctx context.Context) bool {
	w.mu.Lock()
	var (
		recs  []raftstore.GroupMembers
		dones [][]func(*kerr.Error)
		term  int32
		bytes int
	)
	n := 0
	for ; n < len(w.order); n++ {
		r := w.waiting[w.order[n]]
		if n > 0 && (r.term != term || bytes+len(r.data) > raftstore.MaxGroupMembersBatch) {
			break
		}
		term = r.term
		bytes += len(r.data)
		recs = append(recs, raftstore.GroupMembers{Group: w.order[n], Data: r.data})
		dones = append(dones, r.dones)
		delete(w.waiting, w.order[n])
	}
	w.order = append([]string(nil), w.order[n:]...)
	w.bytes -= bytes
	w.mu.Unlock()
	if n == 0 {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, groupRecordsTimeout)
	err := w.store.StoreGroupMembers(wctx, term, recs)
	cancel()
	code := recordsErrorCode(err)
	if err != nil {
		w.logger.Warn("writing group membership records failed", "records", n, "err", err)
	}
	for _, ds := range dones {
		for _, d := range ds {
			d(code)
		}
	}
	return true
}

// recordsErrorCode is what the members of a group whose record failed
// are told, as Kafka maps a failed write of group metadata: errors that
// send them to find the coordinator again, else UNKNOWN_SERVER_ERROR.
func recordsErrorCode(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raftstore.ErrNotLeader), errors.Is(err, raftstore.ErrClosed), errors.Is(err, raftstore.ErrStorage):
		return kerr.NotCoordinator
	case errors.Is(err, raftstore.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.CoordinatorNotAvailable
	}
	return kerr.UnknownServerError
}
