package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Anomaly classes the checker reports (docs/RELIABILITY.md says what each
// means).
const (
	anLostWrite   = "lost write"
	anDuplicate   = "duplicate"
	anTwoValues   = "two values at one offset"
	anAbortedRead = "aborted read"
	anNonMonotone = "non-monotonic poll"
	anPollSkip    = "poll skip"
	anBackwards   = "committed offsets going backwards"
	anWrongOffset = "acknowledged at wrong offset"
	// anIncomplete is the history's own fault, not the broker's: an
	// operation never completed, or a topic written to was never read
	// back at the end, so the checks above could not be made.
	anIncomplete = "incomplete history"
)

// maxExamples is how many examples of each class checkHistory keeps; a
// last line counts the rest.
const maxExamples = 10

type tpo struct {
	topic     string
	partition int32
	offset    int64
}

func (p tpo) String() string { return fmt.Sprintf("%s/%d@%d", p.topic, p.partition, p.offset) }

type anomalies map[string][]string

func (a anomalies) add(class, format string, args ...any) {
	a[class] = append(a[class], fmt.Sprintf(format, args...))
}

// trimmed keeps maxExamples examples per class and counts the rest.
func (a anomalies) trimmed() map[string][]string {
	out := map[string][]string{}
	for class, ex := range a {
		if len(ex) > maxExamples {
			ex = append(ex[:maxExamples:maxExamples], fmt.Sprintf("... and %d more", len(ex)-maxExamples))
		}
		out[class] = ex
	}
	return out
}

// checkHistory reads a history and returns, for each anomaly class it
// found, up to maxExamples human-readable examples (and a count of the
// rest). An empty map means the history is clean.
//
// Reads (ok polls) are everything any consumer returned; final reads are
// those recorded by workload.final (isFinal). fail and info sends and
// transactions may or may not be in the log: neither is checked, except
// that values of a transaction known aborted must never be read at
// read_committed.
//
// The committed-offset check does not need a linearizability checker
// (porcupine): the harness's groups only commit offsets that move
// forward, so the group's offsets form a max-register, and a history of
// one is linearizable exactly when every fetch returns at least the
// largest offset whose commit was acknowledged before the fetch began,
// and at least what any fetch completed before it began returned. That
// is a linear scan.
func checkHistory(events []event) map[string][]string {
	an := anomalies{}

	// Pair invokes with completions.
	type pk struct {
		process int
		id      int64
	}
	invoked := map[pk]event{}
	var order []pk
	for _, e := range events {
		k := pk{e.Process, e.ID}
		if e.Type == evInvoke {
			if _, dup := invoked[k]; !dup {
				order = append(order, k)
			}
			invoked[k] = e
			continue
		}
		delete(invoked, k)
	}
	for _, k := range order {
		if e, open := invoked[k]; open {
			an.add(anIncomplete, "process %d op %d (%s %s) invoked at %s never completed", k.process, k.id, e.Op, e.Topic, e.Time.Format(time.RFC3339Nano))
		}
	}
	invokeTime := map[pk]time.Time{}
	for _, e := range events {
		if e.Type == evInvoke {
			invokeTime[pk{e.Process, e.ID}] = e.Time
		}
	}

	// Everything read: which values sit at each offset, where each value
	// sits, and what the final reads hold per isolation level.
	type iso struct {
		topic         string
		readCommitted bool
	}
	atOffset := map[tpo][]string{}         // distinct values read at an offset
	where := map[string]map[string][]tpo{} // topic -> value -> distinct positions
	type rcRead struct {
		value string
		at    tpo
	}
	var rcReads []rcRead                     // everything read at read_committed
	finalAt := map[string]map[string][]tpo{} // topic -> value -> positions in final reads
	finalRC := map[string]map[string]bool{}  // topic -> values in read_committed final reads
	finalOffsets := map[iso]map[int32][]int64{}
	addPos := func(m map[string]map[string][]tpo, topic, key string, at tpo) {
		if m[topic] == nil {
			m[topic] = map[string][]tpo{}
		}
		if !slices.Contains(m[topic][key], at) {
			m[topic][key] = append(m[topic][key], at)
		}
	}
	for _, e := range events {
		if e.Op != opPoll || e.Type != evOK {
			continue
		}
		for i, v := range e.Values {
			if i >= len(e.Offsets) {
				break
			}
			at := tpo{e.Topic, e.Partition, e.Offsets[i]}
			if !slices.Contains(atOffset[at], v) {
				atOffset[at] = append(atOffset[at], v)
				if len(atOffset[at]) == 2 {
					an.add(anTwoValues, "%s: read %q, then %q (process %d)", at, atOffset[at][0], v, e.Process)
				}
			}
			addPos(where, e.Topic, v, at)
			if e.ReadCommitted {
				rcReads = append(rcReads, rcRead{v, at})
			}
			if isFinal(e) {
				addPos(finalAt, e.Topic, v, at)
				if e.ReadCommitted {
					if finalRC[e.Topic] == nil {
						finalRC[e.Topic] = map[string]bool{}
					}
					finalRC[e.Topic][v] = true
				}
				k := iso{e.Topic, e.ReadCommitted}
				if finalOffsets[k] == nil {
					finalOffsets[k] = map[int32][]int64{}
				}
				finalOffsets[k][e.Partition] = append(finalOffsets[k][e.Partition], e.Offsets[i])
			}
		}
	}
	for _, byPart := range finalOffsets {
		for p, offs := range byPart {
			slices.Sort(offs)
			byPart[p] = slices.Compact(offs)
		}
	}
	for _, topic := range sortedKeys(where) {
		for _, v := range sortedKeys(where[topic]) {
			if at := where[topic][v]; len(at) > 1 {
				an.add(anDuplicate, "%q read at %v", v, at)
			}
		}
	}

	// Writes.
	noFinal := map[string]bool{}
	missingFinal := func(topic string) bool {
		if _, ok := finalAt[topic]; ok {
			return false
		}
		if !noFinal[topic] {
			noFinal[topic] = true
			an.add(anIncomplete, "topic %s was written to but never read back by a final read", topic)
		}
		return true
	}
	aborted := map[string]string{} // value -> the transaction that wrote it
	for _, e := range events {
		if e.Type != evOK {
			continue
		}
		switch e.Op {
		case opSend:
			if len(e.Values) == 0 || missingFinal(e.Topic) {
				continue
			}
			v := e.Values[0]
			at := finalAt[e.Topic][v]
			acked := tpo{e.Topic, e.Partition, e.Offset}
			switch {
			case len(at) == 0:
				an.add(anLostWrite, "%q acknowledged at %s (process %d) is not in the final read", v, acked, e.Process)
			case e.Offset >= 0 && !slices.Contains(at, acked):
				an.add(anWrongOffset, "%q acknowledged at %s, final read has it at %v", v, acked, at)
			}
		case opTxn:
			if !e.Committed {
				for _, v := range e.Values {
					aborted[v] = fmt.Sprintf("process %d txn %d", e.Process, e.ID)
				}
				continue
			}
			if missingFinal(e.Topic) {
				continue
			}
			for _, v := range e.Values {
				seen := len(finalAt[e.Topic][v]) > 0
				if rc, ok := finalRC[e.Topic]; ok {
					seen = rc[v]
				}
				if !seen {
					an.add(anLostWrite, "%q of committed transaction %d (process %d) is not in the final read of %s", v, e.ID, e.Process, e.Topic)
				}
			}
		}
	}
	for _, e := range events {
		if e.Op != opPoll || e.Type != evOK || !e.ReadCommitted {
			continue
		}
		for i, v := range e.Values {
			if txn, ok := aborted[v]; ok {
				an.add(anAbortedRead, "%q of aborted %s read at read_committed at %s/%d@%d (process %d)", v, txn, e.Topic, e.Partition, e.Offsets[i], e.Process)
			}
		}
	}

	// One input copied by two transactions that both committed: the
	// same source at two offsets in read_committed reads (aborted
	// values are reported above, and a value at two offsets already).
	sourceAt := map[string]map[string][]tpo{}
	copies := map[tpo]string{} // the copy read at each position
	for _, r := range rcReads {
		if _, ok := aborted[r.value]; !ok {
			addPos(sourceAt, r.at.topic, sourceOf(r.value), r.at)
			copies[r.at] = r.value
		}
	}
	for _, topic := range sortedKeys(sourceAt) {
		for _, s := range sortedKeys(sourceAt[topic]) {
			if at := sourceAt[topic][s]; len(at) > 1 && len(where[topic][s]) <= 1 {
				// Each copy names its copier and transaction
				// ("value|process.txn").
				var named []string
				for _, p := range at {
					named = append(named, fmt.Sprintf("%s=%q", p, copies[p]))
				}
				an.add(anDuplicate, "%s: input %q copied by more than one committed transaction: %s", topic, s, strings.Join(named, " "))
			}
		}
	}

	// Poll order, per consumer process and partition.
	type cursorKey struct {
		process   int
		topic     string
		partition int32
	}
	type cursor struct {
		last  int64
		known bool
	}
	cursors := map[cursorKey]*cursor{}
	for _, e := range events {
		if e.Type != evOK || (e.Op != opPoll && e.Op != opSeek) {
			continue
		}
		k := cursorKey{e.Process, e.Topic, e.Partition}
		cur := cursors[k]
		if cur == nil {
			cur = &cursor{}
			cursors[k] = cur
		}
		if e.Op == opSeek {
			cur.last, cur.known = e.Offset-1, e.Offset >= 0
			continue
		}
		final := finalOffsets[iso{e.Topic, e.ReadCommitted}][e.Partition]
		for i := range e.Offsets {
			o := e.Offsets[i]
			if cur.known && o <= cur.last {
				an.add(anNonMonotone, "process %d read %s/%d@%d (%q) after offset %d", e.Process, e.Topic, e.Partition, o, e.Values[i], cur.last)
			} else if cur.known && o > cur.last+1 && final != nil {
				lo, _ := slices.BinarySearch(final, cur.last+1)
				hi, _ := slices.BinarySearch(final, o)
				if hi > lo {
					an.add(anPollSkip, "process %d read %s/%d@%d right after @%d, skipping %d offsets the final read holds (first %d)",
						e.Process, e.Topic, e.Partition, o, cur.last, hi-lo, final[lo])
				}
			}
			cur.last, cur.known = o, true
		}
	}

	// Committed offsets, per consumed topic and partition.
	type tp struct {
		topic     string
		partition int32
	}
	type stamped struct {
		began, done time.Time
		offset      int64
		what        string
	}
	commits, fetches := map[tp][]stamped{}, map[tp][]stamped{}
	for _, e := range events {
		if e.Type != evOK || (e.Op != opCommit && e.Op != opFetch) {
			continue
		}
		s := stamped{began: invokeTime[pk{e.Process, e.ID}], done: e.Time, offset: e.Offset,
			what: fmt.Sprintf("%s by process %d (op %d)", e.Op, e.Process, e.ID)}
		if e.Op == opCommit {
			commits[tp{e.Topic, e.Partition}] = append(commits[tp{e.Topic, e.Partition}], s)
		} else {
			fetches[tp{e.Topic, e.Partition}] = append(fetches[tp{e.Topic, e.Partition}], s)
		}
	}
	keys := make([]tp, 0, len(fetches))
	for k := range fetches {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		fs := fetches[k]
		for _, f := range fs {
			floor := stamped{offset: -1}
			for _, c := range slices.Concat(commits[k], fs) {
				if c.done.Before(f.began) && c.offset > floor.offset {
					floor = c
				}
			}
			if f.offset < floor.offset {
				an.add(anBackwards, "%s/%d: %s read back %d, below %d from %s that completed before it began",
					k.topic, k.partition, f.what, f.offset, floor.offset, floor.what)
			}
		}
	}

	return an.trimmed()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// histBuilder writes synthetic histories for the checker's table tests:
// each event a millisecond after the last, every operation its own id.
type histBuilder struct {
	events []event
	now    time.Time
	id     int64
}

func (b *histBuilder) op(invoke, done event, typ evType) {
	b.id++
	b.now = b.now.Add(time.Millisecond)
	invoke.Time, invoke.ID, invoke.Type = b.now, b.id, evInvoke
	b.events = append(b.events, invoke)
	b.now = b.now.Add(time.Millisecond)
	done.Time, done.ID, done.Type, done.Process = b.now, b.id, typ, invoke.Process
	b.events = append(b.events, done)
}

func (b *histBuilder) send(proc int, topic, v string, p int32, off int64, typ evType) {
	b.op(event{Process: proc, Op: opSend, Topic: topic, Partition: -1, Offset: -1, Values: []string{v}},
		event{Op: opSend, Topic: topic, Partition: p, Offset: off, Values: []string{v}}, typ)
}

// poll records a poll of topic/p returning "value@offset" items.
func (b *histBuilder) poll(proc int, topic string, p int32, rc bool, items ...string) {
	e := event{Process: proc, Op: opPoll, Topic: topic, Partition: p, Offset: -1, ReadCommitted: rc}
	for _, it := range items {
		var v string
		var o int64
		at := len(it) - 1
		for it[at] != '@' {
			at--
		}
		v = it[:at]
		fmt.Sscan(it[at+1:], &o)
		e.Values, e.Offsets = append(e.Values, v), append(e.Offsets, o)
	}
	b.op(event{Process: proc, Op: opPoll, Topic: topic, Partition: p, Offset: -1, ReadCommitted: rc}, e, evOK)
}

func (b *histBuilder) seek(proc int, topic string, p int32, off int64) {
	e := event{Process: proc, Op: opSeek, Topic: topic, Partition: p, Offset: off}
	b.op(e, e, evOK)
}

func (b *histBuilder) txn(proc int, topic string, committed bool, typ evType, vals ...string) {
	b.op(event{Process: proc, Op: opTxn, Topic: topic, Partition: -1, Offset: -1, Values: vals},
		event{Op: opTxn, Topic: topic, Partition: -1, Offset: -1, Values: vals, Committed: committed}, typ)
}

func (b *histBuilder) commit(proc int, topic string, p int32, off int64, typ evType) {
	e := event{Process: proc, Op: opCommit, Topic: topic, Partition: p, Offset: off}
	b.op(e, e, typ)
}

func (b *histBuilder) fetch(proc int, topic string, p int32, off int64) {
	e := event{Process: proc, Op: opFetch, Topic: topic, Partition: p, Offset: off}
	b.op(e, e, evOK)
}

const (
	tFinalIn  = finalProcessBase + 1
	tFinalOut = finalProcessBase + 201
	tFinalRC  = finalProcessBase + 301
)

// cleanHistory is a small history with nothing wrong in it, including
// outcomes that may legitimately be absent or present: an info send found
// in the log, an info send and a failed send that are not, a transaction
// aborted, another of unknown outcome, a commit of unknown outcome that
// a fetch then reads, and a consumer that goes back after a recorded seek.
func cleanHistory() *histBuilder {
	b := &histBuilder{now: time.Unix(1e9, 0)}
	b.send(1, "in", "p1-1", 0, 0, evOK)
	b.send(1, "in", "p1-2", 0, 1, evOK)
	b.send(1, "in", "p1-3", -1, -1, evInfo) // never written
	b.send(1, "in", "p1-4", -1, -1, evFail)
	b.send(1, "in", "p1-5", -1, -1, evInfo) // written at 2 after all
	b.send(2, "in", "p2-1", 1, 0, evOK)
	b.seek(101, "in", 0, 0)
	b.seek(101, "in", 1, 0)
	b.poll(101, "in", 0, false, "p1-1@0")
	b.poll(101, "in", 1, false, "p2-1@0")
	b.poll(101, "in", 0, false, "p1-2@1", "p1-5@2")
	b.seek(101, "in", 0, 1) // reassigned: reads 1 again
	b.poll(101, "in", 0, false, "p1-2@1")
	// The copier: aborted at out/0@0 (marker @1), committed @2 (marker
	// @3), unknown @4 (committed after all, marker @5).
	b.txn(201, "out", false, evOK, "p1-1|201.1")
	b.txn(201, "out", true, evOK, "p1-1|201.2")
	b.commit(201, "in", 0, 1, evOK)
	b.txn(201, "out", false, evInfo, "p1-2|201.3")
	b.commit(201, "in", 0, 2, evInfo)
	b.fetch(250, "in", 0, 2)
	b.fetch(250, "in", 0, 2)
	b.seek(301, "out", 0, 0)
	b.poll(301, "out", 0, true, "p1-1|201.2@2")
	b.poll(301, "out", 0, true, "p1-2|201.3@4")
	// Final reads.
	b.poll(tFinalIn, "in", 0, false, "p1-1@0", "p1-2@1", "p1-5@2")
	b.poll(tFinalIn, "in", 1, false, "p2-1@0")
	b.poll(tFinalOut, "out", 0, false, "p1-1|201.1@0", "p1-1|201.2@2", "p1-2|201.3@4")
	b.poll(tFinalRC, "out", 0, true, "p1-1|201.2@2", "p1-2|201.3@4")
	return b
}

func TestCheckHistory(t *testing.T) {
	cases := []struct {
		name string
		add  func(b *histBuilder)
		want []string // classes, sorted
	}{
		{"clean", func(*histBuilder) {}, nil},
		{"clean: empty", nil, nil},
		{"lost write", func(b *histBuilder) { b.send(1, "in", "p1-9", 1, 1, evOK) }, []string{anLostWrite}},
		{"lost write: committed transaction", func(b *histBuilder) {
			b.txn(201, "out", true, evOK, "p1-5|201.4")
			b.poll(tFinalOut, "out", 0, false, "p1-5|201.4@6") // only read_uncommitted sees it
		}, []string{anLostWrite}},
		{"acknowledged at wrong offset", func(b *histBuilder) {
			b.send(2, "in", "p2-2", 1, 5, evOK)
			b.poll(tFinalIn, "in", 1, false, "p2-2@1")
		}, []string{anWrongOffset}},
		{"duplicate", func(b *histBuilder) { b.poll(tFinalIn, "in", 1, false, "p1-2@1") }, []string{anDuplicate}},
		{"duplicate: input copied twice", func(b *histBuilder) {
			b.txn(201, "out", true, evOK, "p1-1|201.4")
			b.poll(tFinalRC, "out", 0, true, "p1-1|201.4@6")
		}, []string{anDuplicate}},
		{"two values at one offset", func(b *histBuilder) {
			b.seek(102, "in", 1, 0)
			b.poll(102, "in", 1, false, "p9-9@0")
		}, []string{anTwoValues}},
		{"aborted read", func(b *histBuilder) {
			b.seek(302, "out", 0, 0)
			b.poll(302, "out", 0, true, "p1-1|201.1@0", "p1-1|201.2@2")
		}, []string{anAbortedRead}},
		{"non-monotonic poll", func(b *histBuilder) { b.poll(101, "in", 0, false, "p1-1@0") }, []string{anNonMonotone}},
		{"non-monotonic poll: repeat within a poll", func(b *histBuilder) {
			b.seek(102, "in", 1, 0)
			b.poll(102, "in", 1, false, "p2-1@0", "p2-1@0")
		}, []string{anNonMonotone}},
		{"clean: read again after a seek", func(b *histBuilder) {
			b.seek(101, "in", 0, 0)
			b.poll(101, "in", 0, false, "p1-1@0", "p1-2@1")
		}, nil},
		{"poll skip", func(b *histBuilder) {
			b.seek(102, "in", 0, 0)
			b.poll(102, "in", 0, false, "p1-1@0")
			b.poll(102, "in", 0, false, "p1-5@2")
		}, []string{anPollSkip}},
		{"poll skip: from the seek", func(b *histBuilder) {
			b.seek(102, "in", 0, 0)
			b.poll(102, "in", 0, false, "p1-2@1")
		}, []string{anPollSkip}},
		{"poll skip: read_committed skips a committed record", func(b *histBuilder) {
			b.seek(302, "out", 0, 0)
			b.poll(302, "out", 0, true, "p1-2|201.3@4")
		}, []string{anPollSkip}},
		{"clean: unknown start position", func(b *histBuilder) {
			b.seek(102, "in", 0, -1)
			b.poll(102, "in", 0, false, "p1-5@2")
		}, nil},
		{"committed offsets going backwards", func(b *histBuilder) { b.fetch(250, "in", 0, 1) }, []string{anBackwards}},
		{"committed offsets going backwards: below an acknowledged commit", func(b *histBuilder) {
			b.commit(201, "in", 1, 7, evOK)
			b.fetch(250, "in", 1, 3)
		}, []string{anBackwards}},
		{"clean: fetch concurrent with a commit", func(b *histBuilder) {
			// The fetch begins before the commit completes.
			b.id++
			id := b.id
			b.events = append(b.events, event{Time: b.now.Add(time.Millisecond), Process: 250, ID: id, Type: evInvoke, Op: opFetch, Topic: "in", Partition: 1})
			b.commit(201, "in", 1, 7, evOK)
			b.events = append(b.events, event{Time: b.now.Add(time.Millisecond), Process: 250, ID: id, Type: evOK, Op: opFetch, Topic: "in", Partition: 1, Offset: -1})
		}, nil},
		{"incomplete history: no completion", func(b *histBuilder) {
			b.events = append(b.events, event{Process: 1, ID: 999, Type: evInvoke, Op: opSend, Topic: "in", Values: []string{"p1-999"}})
		}, []string{anIncomplete}},
		{"incomplete history: no final read", func(b *histBuilder) { b.send(1, "other", "p1-10", 0, 0, evOK) }, []string{anIncomplete}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var events []event
			if tc.add != nil {
				b := cleanHistory()
				tc.add(b)
				events = b.events
			}
			got := checkHistory(events)
			classes := sortedKeys(got)
			if !slices.Equal(classes, tc.want) {
				t.Fatalf("classes %v, want %v; report: %v", classes, tc.want, got)
			}
			for _, c := range classes {
				t.Logf("%s: %v", c, got[c])
			}
		})
	}
}

// TestCheckHistoryExamplesCapped: a class keeps maxExamples examples and
// counts the rest.
func TestCheckHistoryExamplesCapped(t *testing.T) {
	b := cleanHistory()
	for i := 0; i < 25; i++ {
		b.send(3, "in", fmt.Sprintf("p3-%d", i), 2, int64(i), evOK)
	}
	got := checkHistory(b.events)[anLostWrite]
	if len(got) != maxExamples+1 || got[maxExamples] != "... and 15 more" {
		t.Fatalf("%d examples: %v", len(got), got)
	}
}
