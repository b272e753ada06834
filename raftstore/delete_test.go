package raftstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// checkpointNow makes the next applied entry take a checkpoint, and gives
// it one.
func checkpointNow(t *testing.T, s *Store) {
	t.Helper()
	s.fsm.checkpointDue.Store(true)
	produce(t, s, "ckpt", 0, batchtest.NoProducer, "tick")
}

// tombstonesIn lists what the tombstone directory holds, once the
// background removal after a checkpoint has had a moment.
func tombstonesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for range 100 {
		out = nil
		ents, err := os.ReadDir(filepath.Join(dir, deletedDir))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range ents {
			out = append(out, e.Name())
		}
		if len(out) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out
}

// TestDeleteTopicCrash kills the node right after a deletion at every
// point that matters: before the checkpoint that forgets the topic (the
// restart used to fail with "partition X-0 ends at 0 but its checkpoint
// says N"), after it, and after a delete and re-create of the same name
// in one checkpoint window.
func TestDeleteTopicCrash(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// after deleting "victim" (which holds 3 records)
		then func(t *testing.T, s *Store)
		// what the restarted node holds in "victim": -1 for no topic
		wantEnd int64
	}{
		{"crash before the checkpoint", func(t *testing.T, s *Store) {}, -1},
		{"crash after the checkpoint", func(t *testing.T, s *Store) { checkpointNow(t, s) }, -1},
		{"recreate, then crash", func(t *testing.T, s *Store) {
			if err := s.CreateTopic(ctx, "victim", topic.NewID(), 2, nil); err != nil {
				t.Fatal(err)
			}
			produce(t, s, "victim", 0, batchtest.NoProducer, "new")
		}, 1},
		{"recreate, delete again, crash", func(t *testing.T, s *Store) {
			if err := s.CreateTopic(ctx, "victim", topic.NewID(), 2, nil); err != nil {
				t.Fatal(err)
			}
			produce(t, s, "victim", 0, batchtest.NoProducer, "new")
			if err := s.DeleteTopic(ctx, "victim"); err != nil {
				t.Fatal(err)
			}
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestStore(t, dir)
			for _, name := range []string{"victim", "ckpt"} {
				if err := s.CreateTopic(ctx, name, topic.NewID(), 2, nil); err != nil {
					t.Fatal(err)
				}
			}
			produce(t, s, "victim", 0, batchtest.NoProducer, "a", "b", "c")
			checkpointNow(t, s)
			if err := s.DeleteTopic(ctx, "victim"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "victim-0")); !os.IsNotExist(err) {
				t.Fatalf("partition dir still in place after the deletion: %v", err)
			}
			tc.then(t, s)
			s.crashForTest()

			s = openTestStore(t, dir)
			defer s.Close()
			l, ok := s.Log("victim", 0)
			switch {
			case tc.wantEnd < 0 && ok:
				t.Fatalf("deleted topic is back with %d records", l.EndOffset())
			case tc.wantEnd >= 0 && !ok:
				t.Fatal("re-created topic is gone")
			case ok && l.EndOffset() != tc.wantEnd:
				t.Fatalf("re-created topic holds %d records, want %d", l.EndOffset(), tc.wantEnd)
			}
			// The deletion's tombstones go with the next checkpoint.
			checkpointNow(t, s)
			if ts := tombstonesIn(t, dir); len(ts) != 0 {
				t.Fatalf("tombstones left after a checkpoint: %v", ts)
			}
			if l, ok := s.Log("ckpt", 0); !ok || l.EndOffset() < 1 {
				t.Fatal("the other topic lost data")
			}
		})
	}
}

// TestRestoreTombstones is the start-up reconciliation as a table: which
// directories a checkpoint at index 10 keeps, restores and removes. A
// "*" marks the directory holding the checkpointed data.
func TestRestoreTombstones(t *testing.T) {
	for _, tc := range []struct {
		name string
		dirs []string // before, relative to the data dir
		want []string // after: the data dir's partition dirs
	}{
		{"covered tombstone removed", []string{".deleted/9/t-0"}, nil},
		{"uncovered tombstone restored", []string{".deleted/11/t-0*"}, []string{"t-0*"}},
		{"re-created dir replaced by the earliest uncovered tombstone",
			[]string{"t-0", ".deleted/11/t-0*", ".deleted/15/t-0", ".deleted/3/t-0"}, []string{"t-0*"}},
		{"other partitions untouched", []string{"u-1", ".deleted/12/t-0*"}, []string{"t-0*", "u-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range tc.dirs {
				name, marked := strings.CutSuffix(d, "*")
				if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
					t.Fatal(err)
				}
				if marked {
					if err := os.WriteFile(filepath.Join(dir, name, "old"), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := restoreTombstones(dir, 10); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(dir)
			var got []string
			for _, e := range ents {
				name := e.Name()
				if name == deletedDir {
					if left, _ := os.ReadDir(filepath.Join(dir, name)); len(left) > 0 {
						t.Fatalf("tombstones left: %v", left)
					}
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, name, "old")); err == nil {
					name += "*"
				}
				got = append(got, name)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("after restore: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeleteLongTopicName: a topic with a name of the longest length Kafka
// allows can be deleted (a tombstone named after the partition directory
// plus a suffix used to exceed the filesystem's name limit, which stopped
// every replica at the same entry, again at every restart).
func TestDeleteLongTopicName(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	name := strings.Repeat("n", topic.MaxNameLen)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, name, topic.NewID(), 12, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.FailErr(); err != nil {
		t.Fatalf("the state machine stopped: %v", err)
	}
	if _, ok := s.Topic(name); ok {
		t.Fatal("not deleted")
	}
}

// TestQuarantine: a deleted name is quarantined for deletedTopicQuarantine
// after the deletion's time (the leader's clock in the command), an
// explicit create ends it, clocks far apart cannot make it last forever,
// and the queue forgets ended quarantines.
func TestQuarantine(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	for _, n := range []string{"q1", "q2"} {
		if err := s.CreateTopic(ctx, n, topic.NewID(), 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTopic(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	s.fsm.mu.RLock()
	at := s.fsm.deleted["q1"]
	s.fsm.mu.RUnlock()
	base := time.UnixMilli(at)
	q := deletedTopicQuarantine
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{
		{base, true},
		{base.Add(q - time.Millisecond), true},
		{base.Add(q), false},
		{base.Add(-q / 2), true},  // this node's clock a little behind the leader's
		{base.Add(-2 * q), false}, // far behind: over, not stuck
	} {
		if got := s.RecentlyDeleted("q1", tc.now); got != tc.want {
			t.Errorf("RecentlyDeleted at %v: %v, want %v", tc.now.Sub(base), got, tc.want)
		}
	}
	if err := s.CreateTopic(ctx, "q2", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if s.RecentlyDeleted("q2", base) {
		t.Fatal("an explicit create did not end the quarantine")
	}
	// A later deletion, after the quarantine, drops the ended ones.
	s.fsm.mu.Lock()
	s.fsm.quarantine("q3", at+2*q.Milliseconds())
	n, qn := len(s.fsm.deleted), len(s.fsm.deletedQ)
	s.fsm.mu.Unlock()
	if n != 1 || qn != 1 {
		t.Fatalf("quarantine holds %d names, %d queued, want 1 and 1", n, qn)
	}
}
