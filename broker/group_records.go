package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/raftstore"
)

// groupRecords writes the group coordinator's membership records through
// raft (group.Config.Persist). Records go out in the order they were
// given, so the last one of a group wins on every replica; what queues
// while one write is in flight goes out in the next, as one raft entry.
// The queue holds at most a few records per group: a group writes one per
// completed rebalance, and a rebalance takes a round trip of its members.
type groupRecords struct {
	store  *raftstore.Store
	logger *slog.Logger

	mu    sync.Mutex
	queue []queuedRecord
	wake  chan struct{}
}

type queuedRecord struct {
	rec  raftstore.GroupMembers
	done func(*kerr.Error)
}

// groupRecordsBatch bounds the bytes of records one raft entry carries.
const groupRecordsBatch = 8 << 20

// groupRecordsTimeout bounds one write; a write that times out fails its
// rebalance, whose members rejoin.
const groupRecordsTimeout = 30 * time.Second

func newGroupRecords(store *raftstore.Store, logger *slog.Logger) *groupRecords {
	return &groupRecords{store: store, logger: logger, wake: make(chan struct{}, 1)}
}

// persist queues a record; done runs on the writer's goroutine.
func (w *groupRecords) persist(group string, data []byte, done func(*kerr.Error)) {
	w.mu.Lock()
	w.queue = append(w.queue, queuedRecord{raftstore.GroupMembers{Group: group, Data: data}, done})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes queued records until stop closes, then fails what is left.
func (w *groupRecords) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		select {
		case <-stop:
			cancel()
			w.mu.Lock()
			left := w.queue
			w.queue = nil
			w.mu.Unlock()
			for _, q := range left {
				q.done(kerr.CoordinatorNotAvailable)
			}
			return
		case <-w.wake:
		}
		for w.writeBatch(ctx, stop) {
		}
	}
}

// writeBatch writes the records at the head of the queue, and reports
// whether it found any.
func (w *groupRecords) writeBatch(ctx context.Context, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
	}
	w.mu.Lock()
	n, bytes := 0, 0
	for n < len(w.queue) && (n == 0 || bytes+len(w.queue[n].rec.Data) <= groupRecordsBatch) {
		bytes += len(w.queue[n].rec.Data)
		n++
	}
	batch := w.queue[:n:n]
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.queue = nil // let the old array go
	}
	w.mu.Unlock()
	if n == 0 {
		return false
	}
	recs := make([]raftstore.GroupMembers, n)
	for i, q := range batch {
		recs[i] = q.rec
	}
	wctx, cancel := context.WithTimeout(ctx, groupRecordsTimeout)
	err := w.store.StoreGroupMembers(wctx, recs)
	cancel()
	var code *kerr.Error
	if err != nil {
		code = kerr.UnknownServerError
		if e, ok := kerr.ErrorForCode(coordinatorErrorCode(err)).(*kerr.Error); ok {
			code = e
		}
		w.logger.Warn("writing group membership records failed", "records", n, "err", err)
	}
	for _, q := range batch {
		q.done(code)
	}
	return true
}
