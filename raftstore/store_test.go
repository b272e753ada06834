package raftstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

func testLogger() *slog.Logger {
	if os.Getenv("RAFTSTORE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openTestStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Config{
		NodeID:   1,
		DataDir:  dir,
		RaftAddr: "127.0.0.1:0",
		Broker:   BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092},
		Logger:   testLogger(),
	})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitLeader(ctx); err != nil {
		t.Fatalf("wait leader: %v", err)
	}
	return s
}

func produce(t *testing.T, s *Store, topicName string, part int32, o batchtest.Options, values ...string) ProduceResult {
	t.Helper()
	return produceTxn(t, s, "", topicName, part, o, values...)
}

// produceTxn produces as a request with transactional id txnID does.
func produceTxn(t *testing.T, s *Store, txnID, topicName string, part int32, o batchtest.Options, values ...string) ProduceResult {
	t.Helper()
	vals := make([][]byte, len(values))
	for i, v := range values {
		vals[i] = []byte(v)
	}
	res, err := s.StartProduce(context.Background(), time.Now().UnixMilli(), txnID, []ProduceBatch{{Topic: topicName, Partition: part, Data: batchtest.New(o, vals...)}}).Wait()
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return res[0]
}

// readAll returns every record batch header in a partition.
func readAll(t *testing.T, l *log.Log) []log.BatchHeader {
	t.Helper()
	var out []log.BatchHeader
	off := l.StartOffset()
	for off < l.EndOffset() {
		data, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		for len(data) > 0 {
			h, err := log.ParseBatchHeader(data)
			if err != nil {
				t.Fatalf("parse batch at %d: %v", off, err)
			}
			out = append(out, h)
			off = h.NextOffset()
			data = data[12+h.Length:]
		}
	}
	return out
}

func TestCreateProduceRestart(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "events", topic.NewID(), 2, map[string]string{"retention.ms": "-1"}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.CreateTopic(ctx, "events", topic.NewID(), 2, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: got %v, want ErrTopicExists", err)
	}
	for i := 0; i < 10; i++ {
		r := produce(t, s, "events", int32(i%2), batchtest.NoProducer, "a", "b", "c")
		if r.Err != nil {
			t.Fatalf("produce %d: %v", i, r.Err)
		}
		if want := int64(i/2) * 3; r.BaseOffset != want {
			t.Fatalf("produce %d: base offset %d, want %d", i, r.BaseOffset, want)
		}
	}
	if r := produce(t, s, "nope", 0, batchtest.NoProducer, "x"); !errors.Is(r.Err, ErrUnknownTopic) {
		t.Fatalf("produce to unknown topic: %v", r.Err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s = openTestStore(t, dir)
	defer s.Close()
	for p := int32(0); p < 2; p++ {
		l, ok := s.Log("events", p)
		if !ok {
			t.Fatalf("partition %d missing after restart", p)
		}
		if got := l.EndOffset(); got != 15 {
			t.Fatalf("partition %d end offset %d after restart, want 15", p, got)
		}
		if n := len(readAll(t, l)); n != 5 {
			t.Fatalf("partition %d: %d batches, want 5", p, n)
		}
	}
	tp, ok := s.Topic("events")
	if !ok || tp.Configs["retention.ms"] != "-1" || tp.Partitions != 2 {
		t.Fatalf("topic after restart: %+v", tp)
	}
	if r := produce(t, s, "events", 0, batchtest.NoProducer, "d"); r.BaseOffset != 15 {
		t.Fatalf("produce after restart: offset %d, want 15", r.BaseOffset)
	}
}

// TestCrashReplay stops raft without a final checkpoint, as a kill -9
// would, and checks that the replayed entries rebuild the same log with
// nothing lost and nothing doubled.
func TestCrashReplay(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "t", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		produce(t, s, "t", 0, batchtest.NoProducer, "before")
	}
	// Make a checkpoint happen on the next apply, then write past it.
	s.fsm.checkpointDue.Store(true)
	for i := 0; i < 7; i++ {
		produce(t, s, "t", 0, batchtest.NoProducer, "after", "ckpt")
	}
	if err := s.CreateTopic(ctx, "late", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, s, "late", 0, batchtest.NoProducer, "x")
	s.crashForTest()

	s = openTestStore(t, dir)
	defer s.Close()
	l, _ := s.Log("t", 0)
	if got := l.EndOffset(); got != 5+14 {
		t.Fatalf("end offset after crash %d, want 19", got)
	}
	if n := len(readAll(t, l)); n != 12 {
		t.Fatalf("%d batches after crash, want 12", n)
	}
	late, ok := s.Log("late", 0)
	if !ok || late.EndOffset() != 1 {
		t.Fatalf("topic created after the checkpoint not replayed: ok=%v", ok)
	}
}

func TestIdempotentProducer(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "idem", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	pid, err := s.InitProducerID(ctx, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	opt := func(epoch int16, seq int32) batchtest.Options {
		return batchtest.Options{ProducerID: pid.ProducerID, ProducerEpoch: epoch, BaseSequence: seq}
	}
	steps := []struct {
		name    string
		opt     batchtest.Options
		records int
		wantErr error
		wantOff int64
		dup     bool
	}{
		{"first batch", opt(0, 0), 2, nil, 0, false},
		{"next batch", opt(0, 2), 3, nil, 2, false},
		{"retry of first", opt(0, 0), 2, nil, 0, true},
		{"retry of second", opt(0, 2), 3, nil, 2, true},
		{"gap", opt(0, 9), 1, ErrOutOfOrderSequence, 0, false},
		{"future epoch mid-sequence", opt(1, 3), 1, ErrInvalidProducerEpoch, 0, false},
		{"unknown producer", batchtest.Options{ProducerID: 999, BaseSequence: 0}, 1, ErrUnknownProducerID, 0, false},
		{"in order after errors", opt(0, 5), 1, nil, 5, false},
	}
	for _, st := range steps {
		vals := make([]string, st.records)
		for i := range vals {
			vals[i] = st.name
		}
		r := produce(t, s, "idem", 0, st.opt, vals...)
		if !errors.Is(r.Err, st.wantErr) {
			t.Fatalf("%s: err %v, want %v", st.name, r.Err, st.wantErr)
		}
		if st.wantErr == nil && (r.BaseOffset != st.wantOff || r.Duplicate != st.dup) {
			t.Fatalf("%s: offset %d dup %v, want %d %v", st.name, r.BaseOffset, r.Duplicate, st.wantOff, st.dup)
		}
	}
	// KIP-360 epoch bump keeps the id and resets sequences; the old epoch
	// is fenced.
	bumped, err := s.InitProducerID(ctx, pid.ProducerID, 0)
	if err != nil || bumped.ProducerID != pid.ProducerID || bumped.ProducerEpoch != 1 {
		t.Fatalf("epoch bump: %+v %v", bumped, err)
	}
	if r := produce(t, s, "idem", 0, opt(0, 6), "old"); !errors.Is(r.Err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %v", r.Err)
	}
	if r := produce(t, s, "idem", 0, opt(1, 0), "new"); r.Err != nil || r.BaseOffset != 6 {
		t.Fatalf("new epoch: %+v", r)
	}
	// A client-side epoch bump (franz-go after a sequence error) restarts
	// at sequence 0 and fences the old epoch.
	if r := produce(t, s, "idem", 0, opt(2, 0), "bumped"); r.Err != nil || r.BaseOffset != 7 {
		t.Fatalf("client epoch bump: %+v", r)
	}
	if r := produce(t, s, "idem", 0, opt(1, 1), "old"); !errors.Is(r.Err, ErrInvalidProducerEpoch) {
		t.Fatalf("epoch 1 after the bump: %v", r.Err)
	}
}

func TestTopicAdmin(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"bad name", func() error { return s.CreateTopic(ctx, "bad/name", topic.NewID(), 1, nil) }, topic.ErrInvalidName},
		{"zero partitions", func() error { return s.CreateTopic(ctx, "zero", topic.NewID(), 0, nil) }, ErrInvalidPartitions},
		{"bad config", func() error {
			return s.CreateTopic(ctx, "cfg", topic.NewID(), 1, map[string]string{"retention.ms": "soon"})
		}, topic.ErrInvalidConfig},
		{"unknown config", func() error {
			return s.CreateTopic(ctx, "cfg", topic.NewID(), 1, map[string]string{"no.such": "1"})
		}, topic.ErrUnknownConfig},
		{"create", func() error { return s.CreateTopic(ctx, "adm", topic.NewID(), 1, nil) }, nil},
		{"grow", func() error { return s.CreatePartitions(ctx, "adm", 3) }, nil},
		{"shrink", func() error { return s.CreatePartitions(ctx, "adm", 2) }, ErrInvalidPartitions},
		{"alter", func() error {
			return s.AlterConfigs(ctx, "adm", false, map[string]string{"segment.bytes": "1048576"}, nil)
		}, nil},
		{"alter bad", func() error { return s.AlterConfigs(ctx, "adm", false, map[string]string{"segment.bytes": "-5"}, nil) }, topic.ErrInvalidConfig},
		{"delete", func() error { return s.DeleteTopic(ctx, "adm") }, nil},
		{"delete again", func() error { return s.DeleteTopic(ctx, "adm") }, ErrUnknownTopic},
	}
	for _, tc := range tests {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestDeleteRecordsAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "dr", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		produce(t, s, "dr", 0, batchtest.NoProducer, "a", "b")
	}
	res, err := s.DeleteRecords(ctx, time.Now().UnixMilli(), []DeleteRecordsSpec{{Topic: "dr", Partition: 0, Offset: 3}, {Topic: "dr", Partition: 0, Offset: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].LowWatermark != 3 {
		t.Fatalf("delete records: %+v", res[0])
	}
	if !errors.Is(res[1].Err, ErrInvalidOffset) {
		t.Fatalf("delete past end: %v", res[1].Err)
	}
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	produce(t, s, "dr", 0, batchtest.NoProducer, "c")
	s.crashForTest()
	s = openTestStore(t, dir)
	defer s.Close()
	l, _ := s.Log("dr", 0)
	if l.StartOffset() != 3 || l.EndOffset() != 9 {
		t.Fatalf("after snapshot and crash: start %d end %d, want 3 and 9", l.StartOffset(), l.EndOffset())
	}
}

func TestGroupOffsets(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	ctx := context.Background()
	if err := s.CreateTopic(ctx, "in", topic.NewID(), 2, nil); err != nil {
		t.Fatal(err)
	}
	errs, err := s.CommitOffsets(ctx, 1000, "g1", []OffsetCommit{
		{Topic: "in", Partition: 0, Offset: 5, LeaderEpoch: 2, Metadata: "m"},
		{Topic: "in", Partition: 1, Offset: 7, LeaderEpoch: -1},
		{Topic: "missing", Partition: 0, Offset: 1},
	})
	if err != nil || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrUnknownTopic) {
		t.Fatalf("commit: %v %v", errs, err)
	}
	if _, err := s.CommitOffsets(ctx, 5000, "g2", []OffsetCommit{{Topic: "in", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	s.crashForTest()
	s = openTestStore(t, dir)
	if o, ok := s.GroupOffset("g1", "in", 0); !ok || o.Offset != 5 || o.Metadata != "m" || o.LeaderEpoch != 2 || o.CommitTime != 1000 {
		t.Fatalf("after crash: %+v %v", o, ok)
	}
	if got := s.OffsetGroups(); len(got) != 2 {
		t.Fatalf("groups %v", got)
	}
	// Expiry only touches named (empty) groups and old commits.
	if err := s.ExpireOffsets(ctx, 4000, 2000, []string{"g1", "g2"}); err != nil {
		t.Fatal(err)
	}
	if len(s.GroupOffsets("g1")) != 0 || len(s.GroupOffsets("g2")) != 1 {
		t.Fatalf("after expiry: g1 %v g2 %v", s.GroupOffsets("g1"), s.GroupOffsets("g2"))
	}
	if err := s.DeleteOffsets(ctx, "g2", nil, true); err != nil {
		t.Fatal(err)
	}
	// Deleting a topic deletes its committed offsets.
	if _, err := s.CommitOffsets(ctx, 6000, "g3", []OffsetCommit{{Topic: "in", Partition: 1, Offset: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, "in"); err != nil {
		t.Fatal(err)
	}
	if got := s.GroupOffsets("g3"); len(got) != 0 {
		t.Fatalf("offsets of a deleted topic: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	defer s.Close()
	if got := s.OffsetGroups(); len(got) != 0 {
		t.Fatalf("groups after delete and restart: %v", got)
	}
}

func TestDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	_, err := Open(Config{NodeID: 1, DataDir: dir, RaftAddr: "127.0.0.1:0", Logger: testLogger()})
	if err == nil {
		t.Fatal("second store opened the same data directory")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	s.Close()
}
