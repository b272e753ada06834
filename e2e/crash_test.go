package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ackLedger records every record the broker acknowledged.
type ackLedger struct {
	mu     sync.Mutex
	acked  map[string]placed // value -> where the ack said it went
	failed map[string]error  // value -> why its produce failed
}

type placed struct {
	partition int32
	offset    int64
}

func (p placed) off() int64 { return p.offset }

func newAckLedger() *ackLedger {
	return &ackLedger{acked: map[string]placed{}, failed: map[string]error{}}
}

func (l *ackLedger) promise(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed[string(r.Value)] = err
		return
	}
	l.acked[string(r.Value)] = placed{r.Partition, r.Offset}
}

func (l *ackLedger) firstErrors(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for v, err := range l.failed {
		if len(out) == n {
			break
		}
		out = append(out, v+": "+err.Error())
	}
	return out
}

func (l *ackLedger) counts() (acked, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), len(l.failed)
}

// readEverything reads every partition of topic from its start to its
// current end and returns value -> where each copy sits.
func readEverything(t *testing.T, addr, topic string) (map[string][]placed, map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(newKgo(t, addr))
	ends := endOffsets(t, adm, topic)
	starts := startOffsets(t, adm, topic)
	total := 0
	for p, e := range ends {
		total += int(e - starts[p])
	}
	got := consumeUntil(t, addr, topic, atStart(int32(len(ends))), total, 60*time.Second)
	where := map[string][]placed{}
	for p, recs := range got {
		next := starts[p]
		for _, r := range recs {
			if r.Offset != next {
				t.Errorf("partition %d: offset %d follows %d (gap or reordering in a log with no compaction or transactions)", p, r.Offset, next-1)
			}
			next = r.Offset + 1
			where[string(r.Value)] = append(where[string(r.Value)], placed{p, r.Offset})
		}
	}
	return where, ends
}

// verifyLedger checks that every acknowledged record is in the log exactly
// once, at the offset its acknowledgement reported, and that no record is
// in the log twice.
func verifyLedger(t *testing.T, l *ackLedger, where map[string][]placed, when string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var lost, moved, dups []string
	for v, at := range l.acked {
		copies := where[v]
		switch {
		case len(copies) == 0:
			lost = append(lost, fmt.Sprintf("%s (acked at %d/%d)", v, at.partition, at.offset))
		case copies[0] != at:
			moved = append(moved, fmt.Sprintf("%s acked at %d/%d, found at %v", v, at.partition, at.offset, copies))
		}
	}
	unacked := 0
	for v, copies := range where {
		if len(copies) > 1 {
			dups = append(dups, fmt.Sprintf("%s at %v", v, copies))
		}
		if _, ok := l.acked[v]; !ok {
			unacked++
		}
	}
	sort.Strings(lost)
	sort.Strings(moved)
	sort.Strings(dups)
	show := func(s []string) string {
		if len(s) > 10 {
			return strings.Join(s[:10], "\n  ") + fmt.Sprintf("\n  ... and %d more", len(s)-10)
		}
		return strings.Join(s, "\n  ")
	}
	if len(lost) > 0 {
		t.Errorf("%s: %d of %d acknowledged records are missing:\n  %s", when, len(lost), len(l.acked), show(lost))
	}
	if len(moved) > 0 {
		t.Errorf("%s: %d acknowledged records are not at the offset their ack reported:\n  %s", when, len(moved), show(moved))
	}
	if len(dups) > 0 {
		t.Errorf("%s: %d records appear more than once despite the idempotent producer:\n  %s", when, len(dups), show(dups))
	}
	t.Logf("%s: %d acknowledged, %d failed, %d in the log (%d of them never acknowledged)",
		when, len(l.acked), len(l.failed), len(where), unacked)
}

// TestCrashRecovery kills brokerd with SIGKILL while an idempotent acks=all
// producer is writing, restarts it on the same data directory, and checks
// that every acknowledged record survived, exactly once. The producer stays
// up across the restart and retries what was in flight, so the broker's
// idempotence state must survive the crash too.
func TestCrashRecovery(t *testing.T) {
	rounds, produceFor, rate := 3, 1500*time.Millisecond, 30000.0 // records per second
	if longTests() {
		rounds, produceFor, rate = 6, 2*time.Second, 100000.0
	}
	bp := newBrokerProc(t)
	bp.start()
	const topic = "crash"
	createTopic(t, kadm.NewClient(newKgo(t, bp.kafkaAddr())), topic, 3, nil)

	ledger := newAckLedger()
	seq := 0
	clientLogs := &logBuffer{}
	dumpOnFailure(t, "producer (franz-go) log", clientLogs.String)
	for round := 1; round <= rounds; round++ {
		prod := newKgo(t, bp.kafkaAddr(),
			kgo.WithLogger(kgoLogger{clientLogs}),
			kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.MaxBufferedRecords(2000),
			kgo.ProducerLinger(time.Millisecond),
			kgo.RecordDeliveryTimeout(45*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		)
		// Records are produced with a background context: what is buffered
		// or in flight at the kill is retried against the restarted broker
		// rather than dropped.
		var stopping atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		var produced atomic.Int64
		go func() {
			defer wg.Done()
			began := time.Now()
			for n := 0; !stopping.Load(); n++ {
				// Paced, so that reading everything back stays quick.
				if n%50 == 0 {
					if ahead := time.Duration(float64(n)/rate*float64(time.Second)) - time.Since(began); ahead > 0 {
						time.Sleep(ahead)
					}
				}
				v := fmt.Sprintf("r%d-%09d", round, seq)
				seq++
				prod.Produce(context.Background(), &kgo.Record{Key: []byte(v[len(v)-3:]), Value: []byte(v)}, ledger.promise)
				produced.Add(1)
			}
		}()
		time.Sleep(produceFor)
		ackedBefore, _ := ledger.counts()
		bp.kill()
		stopping.Store(true)
		ackedAtKill, failedAtKill := ledger.counts()
		if ackedAtKill == 0 {
			t.Fatalf("round %d: nothing was acknowledged in %s of producing before the kill", round, produceFor)
		}
		t.Logf("round %d: killed after %d produce calls, %d acked (%d just before SIGKILL), %d failed",
			round, produced.Load(), ackedAtKill, ackedBefore, failedAtKill)

		bp.start()
		// Once ready, the restarted broker must already serve everything
		// it acknowledged before the crash.
		ackedSum := int64(0)
		ledger.mu.Lock()
		maxAcked := map[int32]int64{}
		for _, at := range ledger.acked {
			if at.offset+1 > maxAcked[at.partition] {
				maxAcked[at.partition] = at.offset + 1
			}
		}
		ledger.mu.Unlock()
		rc := dialRaw(t, bp.kafkaAddr())
		for p, want := range maxAcked {
			if got := rawEndOffset(t, rc, topic, p); got < want {
				t.Errorf("round %d: right after the restart partition %d ends at %d, below the acknowledged offset %d", round, p, got, want-1)
			}
			ackedSum += want
		}
		rc.c.Close()
		// The producer loop may be blocked on a full buffer until the
		// broker is back.
		wg.Wait()
		fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := prod.Flush(fctx); err != nil {
			t.Errorf("round %d: flushing the producer after the restart: %v", round, err)
		}
		cancel()
		prod.Close()
		ackedNow, failedNow := ledger.counts()
		t.Logf("round %d: after the restart and a flush, %d more acked, %d more failed (of %d produced)",
			round, ackedNow-ackedAtKill, failedNow-failedAtKill, produced.Load())
		if failedNow > 0 {
			t.Errorf("round %d: %d records failed although the broker came back within the delivery timeout; first errors: %v",
				round, failedNow, ledger.firstErrors(3))
		}
		where, ends := readEverything(t, bp.kafkaAddr(), topic)
		t.Logf("round %d: end offsets after restart %v (%d acknowledged by then)", round, ends, ackedSum)
		verifyLedger(t, ledger, where, fmt.Sprintf("after kill -9 #%d and restart", round))
		if t.Failed() {
			return
		}
	}
	// A final graceful restart keeps everything as well.
	if code := bp.term(30 * time.Second); code != 0 {
		t.Errorf("SIGTERM after the crash rounds: exit code %d, want 0", code)
	}
	bp.start()
	where, _ := readEverything(t, bp.kafkaAddr(), topic)
	verifyLedger(t, ledger, where, "after the final graceful restart")
}

// TestGracefulRestart stops brokerd with SIGTERM (exit code 0), restarts it
// and checks that every record is there and that the log continues.
func TestGracefulRestart(t *testing.T) {
	bp := newBrokerProc(t)
	bp.start()
	const topic = "graceful"
	adm := kadm.NewClient(newKgo(t, bp.kafkaAddr()))
	createTopic(t, adm, topic, 2, map[string]*string{"retention.ms": kadm.StringPtr("86400000")})

	ledger := newAckLedger()
	produce := func(prefix string, n int) {
		prod := newKgo(t, bp.kafkaAddr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		defer prod.Close()
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("%s-%05d", prefix, i))})
		}
		ctx, cancel := waitCtx(30 * time.Second)
		defer cancel()
		for _, r := range prod.ProduceSync(ctx, recs...) {
			ledger.promise(r.Record, r.Err)
			if r.Err != nil {
				t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
			}
		}
	}
	produce("before", 500)
	if code := bp.term(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: brokerd exit code %d, want 0; log tail:\n%s", code, bp.logTail(4000))
	}
	bp.start()
	where, _ := readEverything(t, bp.kafkaAddr(), topic)
	verifyLedger(t, ledger, where, "after SIGTERM and restart")
	if len(where) != 500 {
		t.Errorf("after a graceful restart the log holds %d records, want exactly 500", len(where))
	}
	// Topic configs survive too.
	adm2 := kadm.NewClient(newKgo(t, bp.kafkaAddr()))
	rcs, err := adm2.DescribeTopicConfigs(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs after restart: %v", err)
	}
	found := false
	for _, c := range rcs[0].Configs {
		if c.Key == "retention.ms" {
			found = c.MaybeValue() == "86400000"
		}
	}
	if !found {
		t.Errorf("retention.ms=86400000 set at create time is gone after a restart: %+v", rcs[0].Configs)
	}

	// The log continues where it stopped.
	produce("after", 100)
	where, ends := readEverything(t, bp.kafkaAddr(), topic)
	verifyLedger(t, ledger, where, "after producing on the restarted broker")
	if ends[0]+ends[1] != 600 {
		t.Errorf("end offsets %v sum to %d, want 600", ends, ends[0]+ends[1])
	}
	if code := bp.term(30 * time.Second); code != 0 {
		t.Errorf("second SIGTERM: exit code %d, want 0", code)
	}
	// And a third start, right after, still sees it all.
	bp.start()
	where, _ = readEverything(t, bp.kafkaAddr(), topic)
	verifyLedger(t, ledger, where, "after a second graceful restart")
}

// TestShutdownWithParkedFetch: a consumer's long-poll fetch parked on an
// empty partition must not hold up SIGTERM once that consumer has gone
// away (nobody is left to answer), and the exit code is still 0.
func TestShutdownWithParkedFetch(t *testing.T) {
	bp := newBrokerProc(t)
	bp.start()
	rc := dialRaw(t, bp.kafkaAddr())
	rawCreateTopic(t, rc, "parked", 1)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "parked"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	rc.send(req, 12)
	time.Sleep(300 * time.Millisecond) // parked now
	rc.c.Close()
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	code := bp.term(40 * time.Second)
	took := time.Since(began)
	if code != 0 {
		t.Errorf("SIGTERM: exit code %d, want 0", code)
	}
	if took > 4*time.Second {
		t.Errorf("SIGTERM took %s to exit: a fetch parked (MaxWait 10s) by a client that already disconnected held up shutdown", took.Round(time.Millisecond))
	} else {
		t.Logf("SIGTERM exit after %s", took.Round(time.Millisecond))
	}
}
