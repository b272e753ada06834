package raftstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/raftstore/acl"
	"github.com/brokerd/brokerd/topic"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testCluster is three stores in one raft group on loopback.
type testCluster struct {
	t     *testing.T
	peers []Peer
	dirs  []string
	nodes []*Store
	tune  func(*Config)
}

func newTestCluster(t *testing.T, tune func(*Config)) *testCluster {
	c := &testCluster{t: t, tune: tune}
	for i := int32(1); i <= 3; i++ {
		c.peers = append(c.peers, Peer{ID: i, Addr: freeAddr(t)})
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.nodes = make([]*Store, 3)
	for i := range c.nodes {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Close()
			}
		}
	})
	return c
}

func (c *testCluster) start(i int) {
	cfg := Config{NodeID: int32(i + 1), DataDir: c.dirs[i], RaftAddr: c.peers[i].Addr, Peers: c.peers,
		Broker: BrokerInfo{NodeID: int32(i + 1), Host: "127.0.0.1", Port: 9092}, Logger: clusterLogger(i)}
	if c.tune != nil {
		c.tune(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("open node %d: %v", i+1, err)
	}
	c.nodes[i] = s
}

func (c *testCluster) stop(i int) {
	if err := c.nodes[i].Close(); err != nil {
		c.t.Fatalf("close node %d: %v", i+1, err)
	}
	c.nodes[i] = nil
}

func (c *testCluster) leader() *Store {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.nodes {
			if s != nil && s.IsLeader() {
				return s
			}
		}
		for _, s := range c.nodes {
			if s != nil && s.raft.State().String() == "Leader" {
				_ = s.confirmLeadership()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// segmentSums maps "<partition dir>/<file>" to a checksum of each .log file
// under dir.
func segmentSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	// Partition directories only: not pins, holds or staging (".*").
	matches, _ := filepath.Glob(filepath.Join(dir, "[^.]*", "*.log"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			continue
		}
		rel, _ := filepath.Rel(dir, m)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

func describe(m map[string]string) string {
	var keys []string
	for k, v := range m {
		keys = append(keys, k+"="+v[:8])
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

// TestSnapshotInstallCatchUp: a follower is stopped, the others write
// enough that raft trims its log past what the follower has, and the
// follower comes back. It catches up by a snapshot install that streams the
// segment files it lacks, and its segments end byte-identical to the
// leader's; after a leadership transfer to it, every record is read from
// it. Before, Restore refused a snapshot ahead of the follower and it could
// never catch up.
func TestSnapshotInstallCatchUp(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) {
		cfg.CheckpointInterval = 20 * time.Millisecond
		cfg.SnapshotBytes = 2 << 10
		cfg.TrailingLogs = 4
		cfg.Defaults = topic.Defaults{"segment.bytes": "4096"}
		// raft-wal keeps serving trimmed entries from its open segment
		// (64 MiB); raft-boltdb deletes them at once, which forces the
		// snapshot install this test is about.
		cfg.LogStore = "boltdb"
	})
	ld := c.leader()
	ctx := context.Background()
	if err := ld.CreateTopic(ctx, "c", topic.NewID(), 2, nil); err != nil {
		t.Fatal(err)
	}
	produceN := func(s *Store, n int, tag string) {
		for i := 0; i < n; i++ {
			if _, err := s.Produce(ctx, time.Now().UnixMilli(), []ProduceBatch{{Topic: "c", Partition: int32(i % 2), Data: batchtest.New(batchtest.NoProducer, []byte(fmt.Sprintf("%s-%d-%s", tag, i, strings.Repeat("x", 200))))}}); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	produceN(ld, 20, "before")
	// Stop a follower.
	f := -1
	for i, s := range c.nodes {
		if s != ld {
			f = i
			break
		}
	}
	had, _ := c.nodes[f].logs.LastIndex()
	c.stop(f)
	produceN(ld, 200, "away")
	if _, err := ld.DeleteRecords(ctx, time.Now().UnixMilli(), []DeleteRecordsSpec{{Topic: "c", Partition: 0, Offset: 30}}); err != nil {
		t.Fatal(err)
	}
	if err := ld.CreateTopic(ctx, "later", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := ld.StoreGroupMembers(ctx, ld.LeaderEpoch(), []GroupMembers{{Group: "g", Data: []byte(`{"generation":3}`)}}); err != nil {
		t.Fatal(err)
	}
	// ACLs travel in the snapshot too.
	if _, err := ld.CreateACLs(ctx, []acl.Binding{{ResourceType: acl.ResourceTopic, ResourceName: "c", PatternType: acl.PatternLiteral, Principal: "User:bob", Host: "*", Operation: acl.OpRead, Permission: acl.PermAllow}}); err != nil {
		t.Fatal(err)
	}
	// Wait until the leader's raft log no longer holds what the follower
	// has.
	deadline := time.Now().Add(20 * time.Second)
	for {
		first, _ := ld.logs.FirstIndex()
		if first > had+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader's raft log not trimmed (first index %d)", first)
		}
		time.Sleep(20 * time.Millisecond)
	}
	first, _ := ld.logs.FirstIndex()
	t.Logf("stopped node %d at raft index %d; leader's log now starts at %d", f+1, had, first)
	c.start(f)
	fs := c.nodes[f]
	want := ld.AppliedIndex()
	deadline = time.Now().Add(30 * time.Second)
	for fs.AppliedIndex() < want {
		if time.Now().After(deadline) {
			t.Fatalf("follower at %d, leader at %d", fs.AppliedIndex(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	produceN(ld, 10, "after")
	time.Sleep(300 * time.Millisecond)
	for _, name := range []string{"c", "later"} {
		if _, ok := fs.Topic(name); !ok {
			t.Fatalf("follower lacks topic %s", name)
		}
	}
	if got := string(fs.GroupMembersRecords()["g"]); got != `{"generation":3}` {
		t.Fatalf("follower's membership record of g: %q", got)
	}
	for p := int32(0); p < 2; p++ {
		ll, _ := ld.Log("c", p)
		fl, _ := fs.Log("c", p)
		if fl.EndOffset() != ll.EndOffset() || fl.StartOffset() != ll.StartOffset() {
			t.Fatalf("partition %d: follower [%d, %d), leader [%d, %d)", p, fl.StartOffset(), fl.EndOffset(), ll.StartOffset(), ll.EndOffset())
		}
	}
	// Byte-identical segments (the active ones may differ only if a write
	// is in flight; none is).
	ls, fsums := segmentSums(t, ld.cfg.DataDir), segmentSums(t, fs.cfg.DataDir)
	if describe(ls) != describe(fsums) {
		t.Fatalf("segments differ:\nleader   %s\nfollower %s", describe(ls), describe(fsums))
	}
	if n := fs.ACLs().Len(); n != 1 {
		t.Fatalf("the follower holds %d ACLs after the install, want 1", n)
	}
	if fs.fsm.installs.Load() == 0 {
		t.Fatal("the follower caught up without a snapshot install; the test did not test it")
	}
	// After a leadership transfer to it, the follower serves everything.
	id := raft.ServerID(strconv.Itoa(f + 1))
	if err := ld.raft.LeadershipTransferToServer(id, raft.ServerAddress(c.peers[f].Addr)).Error(); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !fs.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("the follower did not take over")
		}
		_ = fs.confirmLeadership()
		time.Sleep(20 * time.Millisecond)
	}
	total := 0
	for p := int32(0); p < 2; p++ {
		l, _ := fs.Log("c", p)
		for _, h := range readAll(t, l) {
			total += int(h.RecordCount)
		}
	}
	// 230 records, minus the 30 below partition 0's start offset.
	if total != 200 {
		t.Fatalf("the new leader serves %d records, want 200", total)
	}
	produceN(fs, 2, "new-leader")
}

func clusterLogger(i int) *slog.Logger {
	if os.Getenv("RAFTSTORE_TEST_LOG") == "" {
		return testLogger()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", i+1)
}

// streamSnapshot takes a snapshot of s and returns the stream raft would
// send to a follower, and the snapshot's raft index.
func streamSnapshot(t *testing.T, s *Store) ([]byte, uint64) {
	t.Helper()
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snaps := &snapshotStore{inner: mustFileSnaps(t, s.cfg.DataDir), dataDir: s.cfg.DataDir, logger: testLogger()}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("list snapshots: %v", err)
	}
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || int64(len(b)) != meta.Size {
		t.Fatalf("read stream: %d bytes of %d: %v", len(b), meta.Size, err)
	}
	return b, list[0].Index
}

func mustFileSnaps(t *testing.T, dataDir string) *raft.FileSnapshotStore {
	t.Helper()
	fs, err := raft.NewFileSnapshotStore(filepath.Join(dataDir, "raft"), 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// crashAndReceive crashes d and has its data directory dst receive stream
// as a snapshot a few entries past index, as a lagging node would.
func crashAndReceive(t *testing.T, d *Store, dst string, stream []byte, index uint64) {
	t.Helper()
	cf := d.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		t.Fatal(err)
	}
	term := d.raft.CurrentTerm()
	d.crashForTest()
	receive(t, dst, stream, index+5, term, cf.Configuration())
}

// receive writes stream into dataDir's snapshot store as raft does for an
// InstallSnapshot, without restoring it.
func receive(t *testing.T, dataDir string, stream []byte, index, term uint64, cfg raft.Configuration) {
	t.Helper()
	snaps := &snapshotStore{inner: mustFileSnaps(t, dataDir), dataDir: dataDir, logger: testLogger()}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, term, cfg, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	// In odd pieces, as a network delivers it.
	for len(stream) > 0 {
		n := min(len(stream), 777)
		if _, err := sink.Write(stream[:n]); err != nil {
			t.Fatalf("sink write: %v", err)
		}
		stream = stream[n:]
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("sink close: %v", err)
	}
}

// TestInstallAfterCrash: a node that stored a snapshot from its leader and
// crashed before restoring it (or in the middle of installing it) finishes
// the install at start, instead of refusing to start or skipping entries.
func TestInstallAfterCrash(t *testing.T) {
	for _, phase := range []string{"received", "A", "B"} {
		t.Run(phase, func(t *testing.T) {
			src := openTuned(t, t.TempDir(), func(c *Config) { c.Defaults = topic.Defaults{"segment.bytes": "2048"} })
			ctx := context.Background()
			if err := src.CreateTopic(ctx, "i", topic.NewID(), 2, nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 60; i++ {
				produce(t, src, "i", int32(i%2), batchtest.NoProducer, strings.Repeat("v", 100))
			}
			stream, index := streamSnapshot(t, src)
			defer src.Close()

			dst := t.TempDir()
			d := openTestStore(t, dst)
			if err := d.CreateTopic(ctx, "old", topic.NewID(), 1, nil); err != nil {
				t.Fatal(err)
			}
			produce(t, d, "old", 0, batchtest.NoProducer, "stale")
			crashAndReceive(t, d, dst, stream, index)
			if phase != "received" {
				// The install began: the marker says how far it got.
				raw, err := readSnapManifest(bytesReader(stream))
				if err != nil {
					t.Fatal(err)
				}
				var m manifest
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				f := &fsm{dataDir: dst, logger: testLogger()}
				st := installState{Index: m.AppliedIndex, Phase: "A", Staging: filepath.Base(stagingDir(dst, m.AppliedIndex)), Manifest: raw}
				if err := f.writeInstallState(st); err != nil {
					t.Fatal(err)
				}
				if phase == "B" {
					trash := filepath.Join(dst, installTrash)
					os.MkdirAll(trash, 0o755)
					if err := moveDirs(dst, trash, isPartitionDir); err != nil {
						t.Fatal(err)
					}
					st.Phase = "B"
					f.writeInstallState(st)
				}
			}
			d = openTestStore(t, dst)
			defer d.Close()
			if _, ok := d.Topic("old"); ok {
				t.Fatal("the state before the install survived it")
			}
			for p := int32(0); p < 2; p++ {
				l, ok := d.Log("i", p)
				if !ok || l.EndOffset() != 30 {
					t.Fatalf("partition %d after the install: ok=%v", p, ok)
				}
			}
			if want, got := segmentSums(t, src.cfg.DataDir), segmentSums(t, dst); describe(want) != describe(got) {
				t.Fatalf("segments differ:\nsource %s\ninstalled %s", describe(want), describe(got))
			}
		})
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
