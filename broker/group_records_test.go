package broker

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerd/brokerd/raftstore"
)

// The records writer, against a real one-node store: records reach the
// replicated state, a record from another leadership is refused, one too
// large fails alone, and what waits at stop is failed, not lost silently.
func TestGroupRecordsWriter(t *testing.T) {
	b := newTestBroker(t, nil)
	w := newGroupRecords(b.store, b.logger)
	w.setTerm(b.store.LeaderEpoch())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); w.run(stop) }()

	var mu sync.Mutex
	got := map[string]*kerr.Error{}
	var wg sync.WaitGroup
	give := func(name, group string, data []byte) {
		wg.Add(1)
		w.persist(group, data, func(err *kerr.Error) {
			mu.Lock()
			got[name] = err
			mu.Unlock()
			wg.Done()
		})
	}
	give("a1", "a", []byte("one"))
	give("a2", "a", []byte("two"))
	give("big", "b", make([]byte, raftstore.MaxGroupMembersBytes+1))
	give("c", "c", []byte("three"))
	wg.Wait()
	for _, n := range []string{"a1", "a2", "c"} {
		if got[n] != nil {
			t.Fatalf("%s: %v", n, got[n])
		}
	}
	if got["big"] != kerr.UnknownServerError {
		t.Fatalf("a record too large: %v", got["big"])
	}
	recs := b.store.GroupMembersRecords()
	if !bytes.Equal(recs["a"], []byte("two")) || !bytes.Equal(recs["c"], []byte("three")) || recs["b"] != nil {
		t.Fatalf("records %q", recs)
	}

	// A record given for an older leadership is refused by raft.
	w.setTerm(b.store.LeaderEpoch() - 1)
	give("stale", "a", []byte("stale"))
	wg.Wait()
	if got["stale"] != kerr.NotCoordinator || !bytes.Equal(b.store.GroupMembersRecords()["a"], []byte("two")) {
		t.Fatalf("stale record: %v, stored %q", got["stale"], b.store.GroupMembersRecords()["a"])
	}

	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not stop")
	}
	give("late", "d", []byte("late"))
	wg.Wait()
	if got["late"] != kerr.CoordinatorNotAvailable {
		t.Fatalf("a record given after stop: %v", got["late"])
	}
}
