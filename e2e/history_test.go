package e2e

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// History conventions beyond harness_api_test.go, shared by the workloads
// and the checker.
//
//   - Process numbers: the runner hands workload i the block
//     first = 1+100*i .. first+99; a workload numbers its clients within it.
//   - Final reads (workload.final) are recorded with Process
//     finalProcessBase+first, so the checker tells them apart from the
//     reads made during the faults.
//   - opSeek: a consumer's position on Topic/Partition was set (Offset, or
//     -1 if unknown): at its start, or after a reassignment. The checker's
//     poll-order checks start over at a seek.
//   - opCommit and opFetch name the consumed topic in Topic: the harness
//     runs one consumer group per consumed topic.
//   - A value written in a transaction may be "source|attempt": the part
//     before '|' names the input it copies, so that one input copied by
//     two committed transactions shows as a duplicate in read_committed
//     reads, while each attempt's value stays unique.
const (
	finalProcessBase = 1 << 20
	opSeek           = "seek"
)

func isFinal(e event) bool { return e.Process >= finalProcessBase }

// sourceOf is the input a transactional copy stands for (see above).
func sourceOf(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] == '|' {
			return v[:i]
		}
	}
	return v
}

// recorder numbers one client's operations and writes their events.
type recorder struct {
	h       *history
	process int
	next    atomic.Int64
}

func (r *recorder) id() int64 { return r.next.Add(1) }

// invoke records the start of an operation and returns its id.
func (r *recorder) invoke(e event) int64 {
	e.Process, e.ID, e.Type = r.process, r.id(), evInvoke
	r.h.add(e)
	return e.ID
}

// complete records the end of operation id.
func (r *recorder) complete(id int64, typ evType, e event) {
	e.Process, e.ID, e.Type = r.process, id, typ
	r.h.add(e)
}

// seek records that the consumer's position on topic/partition is at.
func (r *recorder) seek(topic string, partition int32, at int64) {
	id := r.invoke(event{Op: opSeek, Topic: topic, Partition: partition, Offset: at})
	r.complete(id, evOK, event{Op: opSeek, Topic: topic, Partition: partition, Offset: at})
}

// polled records what one PollFetches returned, partition by partition:
// an invoke stamped when the poll began and an ok with the values and
// offsets in order. Fetch errors other than the poll's own deadline are
// recorded as info polls. It returns the number of records.
func (r *recorder) polled(began time.Time, fs kgo.Fetches, readCommitted bool) int {
	n := 0
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		id := r.invoke(event{Time: began, Op: opPoll, Topic: topic, Partition: p, Offset: -1, ReadCommitted: readCommitted})
		r.complete(id, evInfo, event{Op: opPoll, Topic: topic, Partition: p, Offset: -1, ReadCommitted: readCommitted, Err: err.Error()})
	})
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		e := event{Op: opPoll, Topic: fp.Topic, Partition: fp.Partition, Offset: -1, ReadCommitted: readCommitted}
		for _, rec := range fp.Records {
			e.Values = append(e.Values, string(rec.Value))
			e.Offsets = append(e.Offsets, rec.Offset)
		}
		n += len(fp.Records)
		id := r.invoke(event{Time: began, Op: opPoll, Topic: fp.Topic, Partition: fp.Partition, Offset: -1, ReadCommitted: readCommitted})
		r.complete(id, evOK, e)
	})
	return n
}

// outcomeOf maps a franz-go produce or transaction error to the history:
// nil is ok; an error the broker returned that retrying cannot change
// (a non-retriable Kafka error code: the request was refused) is fail;
// anything else (a delivery timeout, retries exhausted, a lost
// connection, a closed client) leaves the outcome unknown: info.
func outcomeOf(err error) evType {
	if err == nil {
		return evOK
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.UnknownServerError) {
		return evFail
	}
	return evInfo
}

// finalRead reads every partition of topic from the start, at the given
// isolation level, on the healed cluster, and records each poll as a
// final read of process finalProcessBase+first. It stops once every
// partition has been read to its end offset, or, since the last offsets
// of a partition written in transactions are markers no read returns,
// once nothing new has arrived for a few seconds.
func finalRead(t *testing.T, c *procCluster, h *history, first int, topic string, partitions int32, readCommitted bool) {
	t.Helper()
	addr := c.nodes[c.waitLeader(30*time.Second)].kafkaAddr()
	ends := endOffsets(t, newAdmin(t, addr), topic)
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl := newKgo(t, addr, kgo.SeedBrokers(c.seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: atStart(partitions)}),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(250*time.Millisecond))
	r := &recorder{h: h, process: finalProcessBase + first}
	next := map[int32]int64{}
	reached := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(90 * time.Second)
	quiet, lastNew := 4*time.Second, time.Now()
	total := 0
	for time.Now().Before(deadline) && !reached() && time.Since(lastNew) < quiet {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		began := time.Now()
		fs := cl.PollFetches(ctx)
		cancel()
		if n := r.polled(began, fs, readCommitted); n > 0 {
			total += n
			lastNew = time.Now()
		}
		fs.EachRecord(func(rec *kgo.Record) { next[rec.Partition] = rec.Offset + 1 })
	}
	t.Logf("final read of %s (read_committed=%v): %d records up to %v, end offsets %v", topic, readCommitted, total, next, ends)
}
