package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// copierWorkload runs transactional copiers: franz-go
// GroupTransactSessions in one consumer group that read the input topic at
// read_committed and copy each value v into the output topic as
// "v|<process>.<txn>" (history_test.go), committing the group's offsets
// inside the transaction. Every abortEvery-th transaction of each copier
// is aborted on purpose. Each transaction is a txn event (ok with
// Committed, or info when End failed) carrying the values it wrote, and
// each partition's offset it commits is a commit event (ok if the
// transaction committed, fail if it aborted, info if unknown).
//
// A fetcher (process first+50) reads the group's committed offsets back
// every half second with require_stable, recording fetch events.
//
// Its final read is the output topic at read_uncommitted.
type copierWorkload struct {
	in, out    string
	partitions int32 // of both topics
	group      string
	copiers    int
	abortEvery int

	first    int
	stopping atomic.Bool
	wg       sync.WaitGroup
	logs     *logBuffer
	logger   kgo.Logger
}

func (w *copierWorkload) name() string { return "copiers" }

func (w *copierWorkload) start(t *testing.T, c *procCluster, h *history, first int) {
	t.Helper()
	w.first = first
	w.logs = &logBuffer{}
	dumpOnFailure(t, "harness copiers (franz-go) log", w.logs.String)
	// The tail above may hold none of what explains a duplicate: also
	// every transaction and group event the copiers logged.
	dumpOnFailure(t, "harness copiers' transaction and group events", func() string {
		return matchingLines(w.logs.String(), copierEvents, 16<<10)
	})
	w.logger = kgoLogger{w.logs}
	if path := os.Getenv("BROKERD_HARNESS_COPIER_LOG"); path != "" {
		// Every franz-go message of the copiers, debug included, to a
		// file: what a duplicate or a rewind is diagnosed from.
		f, err := os.Create(path)
		if err != nil {
			t.Fatalf("BROKERD_HARNESS_COPIER_LOG: %v", err)
		}
		t.Cleanup(func() { f.Close() })
		w.logger = kgo.BasicLogger(io.MultiWriter(f, w.logs), kgo.LogLevelDebug, func() string {
			return time.Now().Format("15:04:05.000000 ")
		})
	}
	for i := 0; i < w.copiers; i++ {
		r := &recorder{h: h, process: first + i}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.copy(t, c, r)
		}()
	}
	adm := kadm.NewClient(newKgo(t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...), kgo.WithLogger(namedLogger{w.logger, "offset fetcher"})))
	fr := &recorder{h: h, process: first + 50}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for !w.stopping.Load() {
			time.Sleep(500 * time.Millisecond)
			w.fetchOffsets(adm, fr)
		}
	}()
}

// copy runs one copier until the workload stops, starting a new session
// (same transactional id: it fences the old one) whenever one fails.
func (w *copierWorkload) copy(t *testing.T, c *procCluster, r *recorder) {
	txn := 0
	for !w.stopping.Load() {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(c.seeds()...),
			kgo.WithLogger(namedLogger{w.logger, fmt.Sprintf("copier %d", r.process)}),
			kgo.ClientID("brokerd-harness"),
			kgo.TransactionalID(fmt.Sprintf("%s-%d", w.group, r.process)),
			kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumerGroup(w.group),
			kgo.ConsumeTopics(w.in),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.DefaultProduceTopic(w.out),
			kgo.RetryTimeout(30*time.Second),
			kgo.SessionTimeout(10*time.Second),
			kgo.FetchMaxWait(500*time.Millisecond),
			kgo.FetchMaxPartitionBytes(64<<10),
		)
		if err != nil {
			t.Errorf("copier %d: new session: %v", r.process, err)
			return
		}
		for !w.stopping.Load() {
			txn++
			if !w.transact(sess, r, txn) {
				break
			}
		}
		sess.Close()
	}
}

// transact polls once and copies what it got in one transaction; false
// means the session failed and must be replaced.
func (w *copierWorkload) transact(sess *kgo.GroupTransactSession, r *recorder, txn int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	fs := sess.PollFetches(ctx)
	cancel()
	if fs.NumRecords() == 0 {
		return true
	}
	if err := sess.Begin(); err != nil {
		fmt.Fprintf(w.logs, "harness: copier %d: begin: %v\n", r.process, err)
		return false
	}
	var recs []*kgo.Record
	fs.EachRecord(func(rec *kgo.Record) {
		v := fmt.Sprintf("%s|%d.%d", rec.Value, r.process, txn)
		recs = append(recs, &kgo.Record{Key: rec.Key, Value: []byte(v)})
	})
	all := make([]string, len(recs))
	for i, rec := range recs {
		all[i] = string(rec.Value)
	}
	id := r.invoke(event{Op: opTxn, Topic: w.out, Partition: -1, Offset: -1, Values: all})
	type commit struct {
		id        int64
		partition int32
		offset    int64
	}
	var commits []commit
	for p, eo := range sess.Client().UncommittedOffsets()[w.in] {
		cid := r.invoke(event{Op: opCommit, Topic: w.in, Partition: p, Offset: eo.Offset})
		commits = append(commits, commit{cid, p, eo.Offset})
	}
	written := make([]atomic.Bool, len(recs))
	for i, rec := range recs {
		sess.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			if err == nil {
				written[i].Store(true)
			}
		})
	}
	abort := w.abortEvery > 0 && txn%w.abortEvery == 0
	ectx, ecancel := context.WithTimeout(context.Background(), 60*time.Second)
	if abort {
		// Make the broker write what the transaction then aborts: End
		// would drop records still buffered in the client.
		if err := sess.Client().Flush(ectx); err != nil {
			fmt.Fprintf(w.logs, "harness: copier %d: flush before abort: %v\n", r.process, err)
		}
	}
	committed, err := sess.End(ectx, kgo.TransactionEndTry(!abort))
	ecancel()
	done := event{Op: opTxn, Topic: w.out, Partition: -1, Offset: -1, Values: all}
	typ, ctyp := evOK, evFail
	switch {
	case err != nil:
		typ, ctyp = evInfo, evInfo
		done.Err = err.Error()
		fmt.Fprintf(w.logs, "harness: copier %d: end transaction %d: %v\n", r.process, txn, err)
	case committed:
		ctyp = evOK
		done.Committed = true
		// Only what was written is in the transaction.
		done.Values = nil
		for i, v := range all {
			if written[i].Load() {
				done.Values = append(done.Values, v)
			}
		}
		if len(done.Values) < len(all) {
			done.Err = fmt.Sprintf("%d of %d records failed", len(all)-len(done.Values), len(all))
		}
	}
	r.complete(id, typ, done)
	for _, cm := range commits {
		r.complete(cm.id, ctyp, event{Op: opCommit, Topic: w.in, Partition: cm.partition, Offset: cm.offset})
	}
	return err == nil
}

// fetchOffsets reads the group's committed offsets and records one fetch
// per partition that has one.
func (w *copierWorkload) fetchOffsets(adm *kadm.Client, r *recorder) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	resps, err := adm.FetchOffsets(kadm.RequireStable(ctx), w.group)
	if err != nil {
		return // a read that returned nothing says nothing
	}
	for p, o := range resps[w.in] {
		if o.Err != nil {
			continue
		}
		id := r.invoke(event{Time: began, Op: opFetch, Topic: w.in, Partition: p, Offset: -1})
		r.complete(id, evOK, event{Op: opFetch, Topic: w.in, Partition: p, Offset: o.At})
	}
}

func (w *copierWorkload) stop(t *testing.T) {
	w.stopping.Store(true)
	w.wg.Wait()
}

func (w *copierWorkload) final(t *testing.T, c *procCluster, h *history) {
	t.Helper()
	finalRead(t, c, h, w.first, w.out, w.partitions, false)
}

// namedLogger says which client of a workload logged a message.
type namedLogger struct {
	kgo.Logger
	name string
}

func (l namedLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	l.Logger.Log(level, l.name+": "+msg, kv...)
}

// copierEvents are the franz-go messages (at info level) that tell what a
// transactional copier did with its offsets and its group.
var copierEvents = regexp.MustCompile(`transact session|transaction session|assigning partitions|new group session|on_lost|revok|end transaction|begin:|fetch offsets|UNSTABLE_OFFSET|ILLEGAL_GENERATION|UNKNOWN_MEMBER_ID|UnknownMemberID|IllegalGeneration|TransactionAbortable|fenced|flush before abort`)

// matchingLines returns the lines of logs that re matches, the last max
// bytes of them.
func matchingLines(logs string, re *regexp.Regexp, max int) string {
	var b strings.Builder
	for _, line := range strings.Split(logs, "\n") {
		if re.MatchString(line) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	out := b.String()
	if len(out) > max {
		out = "...\n" + out[len(out)-max:]
	}
	return out
}
