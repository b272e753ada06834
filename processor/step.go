package processor

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/raftstore"
)

// Bounds of one step's reading and writing, well under raftstore's
// MaxStepBytes for the whole entry.
const (
	stepReadBytes   = 1 << 20 // per log read
	stepOutputBytes = 4 << 20 // stop reading input once outputs hold this much
)

// stepper builds a processor's steps. It belongs to one runner.
type stepper struct {
	store Store
	spec  *Spec
	pipe  *pipeline
	next  int      // input partition to read first in the next step
	last  position // the last input record the step under way took
	// oversizeTaken: the step under way dead-lettered oversize.
	oversizeTaken bool
	// limits, when on, cap a step's records and the windows it closes
	// below the spec's: a step that came out over raftstore.MaxStepBytes
	// is taken again smaller.
	limits stepLimits
	// oversize, when set, is the one input record whose step alone came
	// out over raftstore.MaxStepBytes: it goes to the dead-letter topic
	// without its value (which stays in the input, at the offset the
	// dead letter names) instead of stalling the processor.
	oversize *position
}

// stepLimits caps a step taken again after one too large to commit.
type stepLimits struct {
	on      bool
	records int // at least 1
	windows int // may be 0
}

// shrink returns the limits for the step after b, which was too large, and
// whether they make it smaller. Records halve; so do the windows a window
// stage closes. What other flushing stages emit follows from the records.
func (b built) shrink() (stepLimits, bool) {
	if b.records <= 1 && b.capped == 0 {
		return stepLimits{}, false
	}
	return stepLimits{on: true, records: max(1, b.records/2), windows: b.capped / 2}, true
}

// position is an input record's place.
type position struct {
	topic     string
	partition int32
	offset    int64
}

// maxFlushPerStep bounds the windows one step may close, so that closing
// many at once (a watermark jump over many keys) spreads over several
// steps instead of making one too large to commit.
const maxFlushPerStep = 1 << 16

// built is a step ready to propose, and what it counts.
type built struct {
	step    *raftstore.ProcStep
	records int
	// capped counts the windows window stages closed (the flush a limit
	// caps); last is the last input record taken, and oversize tells
	// whether the step sent stepper.oversize to the dead-letter topic.
	capped   int
	last     position
	oversize bool
}

// applied is told that b was committed: the next step starts reading at
// the next partition, and limits taken for a step too large are dropped.
func (s *stepper) applied(b built) {
	s.next++
	s.limits = stepLimits{}
	if b.oversize {
		s.oversize = nil
	}
	if s.oversize != nil {
		// Not reached yet: keep taking one record at a time.
		s.limits = stepLimits{on: true, records: 1}
	}
}

type outKey struct {
	topic     string
	partition int32
}

// build reads what the committed offsets of info leave to read, runs it
// through the stages and returns the step; records is 0 when there was
// nothing to read.
func (s *stepper) build(info *raftstore.ProcessorInfo, now time.Time) (built, error) {
	type part struct {
		topic string
		idx   int32
	}
	var parts []part
	for _, name := range info.Inputs {
		t, ok := s.store.Topic(name)
		if !ok {
			return built{}, fmt.Errorf("input topic %s does not exist", name)
		}
		for i := int32(0); i < t.Partitions; i++ {
			if !slices.Contains(parts, part{name, i}) {
				parts = append(parts, part{name, i})
			}
		}
	}
	step := &raftstore.ProcStep{Name: info.Name, Generation: info.Generation, Seq: info.Stats.Steps, Now: now.UnixMilli(),
		Start: map[string]int64{}, End: map[string]int64{}}
	state := newStepState(func(k []byte) ([]byte, bool, error) { return s.store.ProcessorState(info.Name, k) },
		func(prefix []byte, fn func(k, v []byte) bool) error {
			return s.store.ProcessorStateScan(info.Name, prefix, fn)
		})
	state.now = step.Now
	state.unread = map[string]bool{}
	for _, p := range parts {
		key := p.topic + "/" + strconv.Itoa(int(p.idx))
		if info.Offsets[key] < s.store.LastStableOffset(p.topic, p.idx) {
			state.unread[key] = true
		}
	}
	outs := map[outKey][]log.Record{}
	outBytes := 0
	emitOut := func(topic string, r Record, inputPartition int32) error {
		t, ok := s.store.Topic(topic)
		if !ok {
			return fmt.Errorf("output topic %s does not exist", topic)
		}
		k := outKey{topic, partitionFor(r.Key, inputPartition, t.Partitions)}
		hs := make([]log.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = log.RecordHeader{Key: h.Key, Value: h.Value}
		}
		outs[k] = append(outs[k], log.Record{Timestamp: r.Timestamp, Key: r.Key, Value: r.Value, Headers: hs})
		outBytes += len(r.Key) + len(r.Value) + 32
		return nil
	}
	budget := s.spec.stepRecords()
	if s.limits.on {
		budget = min(budget, s.limits.records)
	}
	records := 0
	s.last, s.oversizeTaken = position{}, false
	for n := 0; n < len(parts) && budget > 0 && outBytes < stepOutputBytes; n++ {
		p := parts[(s.next+n)%len(parts)]
		key := p.topic + "/" + strconv.Itoa(int(p.idx))
		from := info.Offsets[key]
		to, used, err := s.readPartition(state, p.topic, p.idx, from, budget, &outBytes, emitOut, step)
		if err != nil {
			return built{}, err
		}
		if to > from {
			step.Start[key], step.End[key] = from, to
		}
		budget -= used
		records += used
	}
	if len(step.End) == 0 && !s.pipe.flushesAlone() {
		return built{}, nil
	}
	// Stages that emit at the end of a step (aggregates) flush in order:
	// what stage i emits goes through the stages after it. A window stage
	// may close windows with no new input (an idle partition stops holding
	// the watermark), so it flushes even in a step that read nothing.
	flushCap := maxFlushPerStep
	if s.limits.on {
		flushCap = min(flushCap, s.limits.windows)
	}
	capped := 0
	for i, op := range s.pipe.ops {
		f, ok := op.(Flusher)
		if !ok {
			continue
		}
		var ferr error
		_, bounded := op.(boundedFlusher)
		emit := func(r Record) {
			if ferr != nil {
				return
			}
			if bounded {
				capped++
			}
			// The flushing stage's own changes stay whatever the
			// stages after it make of r.
			state.commitRecord()
			ferr = s.settle(state, r, i+1, emitOut, step)
		}
		var err error
		if bf, ok := op.(boundedFlusher); ok {
			// The flush has a budget of its own, whatever the input took:
			// what it emits and the state it changes (deletes, mostly).
			out0, st0 := outBytes, state.bytes
			err = bf.flushSome(stageState{state, stagePrefix(i)}, emit, flushCap-capped,
				func() bool { return outBytes-out0+state.bytes-st0 >= stepOutputBytes })
		} else {
			err = f.Flush(stageState{state, stagePrefix(i)}, emit)
		}
		if err = errors.Join(err, ferr); err != nil {
			return built{}, fmt.Errorf("stage %d at the end of the step: %w", i+1, err)
		}
		state.commitRecord()
	}
	if len(step.End) == 0 {
		// A flush alone: commit it only when it changed something, with
		// one input partition held where it is (the FSM fences on it).
		if len(outs) == 0 && len(state.step) == 0 {
			return built{}, nil
		}
		key := parts[0].topic + "/" + strconv.Itoa(int(parts[0].idx))
		step.Start[key], step.End[key] = info.Offsets[key], info.Offsets[key]
	}
	for k, v := range state.step {
		if v == nil {
			step.Deletes = append(step.Deletes, []byte(k))
		} else {
			step.Puts = append(step.Puts, raftstore.StateEntry{Key: []byte(k), Value: v})
		}
	}
	for k, recs := range outs {
		step.Outputs = append(step.Outputs, raftstore.ProduceBatch{Topic: k.topic, Partition: k.partition, Data: log.EncodeBatch(recs)})
	}
	return built{step: step, records: records, capped: capped, last: s.last, oversize: s.oversizeTaken}, nil
}

// readPartition runs the records of one input partition from offset from
// through the stages, at most budget of them, and returns the offset the
// step reaches there and how many records it used. Records of aborted
// transactions and control batches are passed over; nothing at or past the
// last stable offset is read.
func (s *stepper) readPartition(state *stepState, topic string, idx int32, from int64, budget int, outBytes *int,
	emitOut func(string, Record, int32) error, step *raftstore.ProcStep) (int64, int, error) {
	l, ok := s.store.Log(topic, idx)
	if !ok {
		return from, 0, fmt.Errorf("input %s-%d does not exist", topic, idx)
	}
	lso := s.store.LastStableOffset(topic, idx)
	at := max(from, l.StartOffset()) // below the start, records are gone
	used := 0
	var aborted []raftstore.AbortedTxn
	if at < lso {
		aborted = s.store.AbortedTxns(topic, idx, at, lso)
	}
	for at < lso && used < budget && *outBytes < stepOutputBytes {
		buf, err := l.Read(at, stepReadBytes)
		if errors.Is(err, log.ErrOffsetOutOfRange) {
			at = max(at, l.StartOffset()) // retention moved the start meanwhile
			continue
		}
		if err != nil {
			return from, 0, fmt.Errorf("read %s-%d at %d: %w", topic, idx, at, err)
		}
		if len(buf) == 0 {
			break
		}
		for len(buf) > 0 && at < lso && used < budget && *outBytes < stepOutputBytes {
			h, recs, err := log.DecodeBatch(buf)
			if err != nil {
				return from, 0, fmt.Errorf("decode %s-%d at %d: %w", topic, idx, at, err)
			}
			buf = buf[h.Size():]
			if h.BaseOffset >= lso {
				break
			}
			if h.Control() || (h.Transactional() && isAborted(aborted, h.ProducerID, h.BaseOffset)) {
				at = max(at, h.NextOffset())
				continue
			}
			for _, lr := range recs {
				if lr.Offset < at {
					continue
				}
				if lr.Offset >= lso || used >= budget || *outBytes >= stepOutputBytes {
					break
				}
				in := Record{Key: lr.Key, Value: lr.Value, Timestamp: lr.Timestamp, Topic: topic, Partition: idx, Offset: lr.Offset}
				for _, hd := range lr.Headers {
					in.Headers = append(in.Headers, Header{Key: hd.Key, Value: hd.Value})
				}
				if err := s.process(state, in, emitOut, step); err != nil {
					return from, 0, err
				}
				s.last = position{topic, idx, lr.Offset}
				used++
				at = lr.Offset + 1
			}
			if used < budget && *outBytes < stepOutputBytes {
				at = max(at, min(h.NextOffset(), lso))
			}
		}
	}
	return max(at, from), used, nil
}

// process runs one input record through the stages.
func (s *stepper) process(state *stepState, in Record, emitOut func(string, Record, int32) error, step *raftstore.ProcStep) error {
	step.In++
	if o := s.oversize; o != nil && o.topic == in.Topic && o.partition == in.Partition && o.offset == in.Offset {
		dead := Record{Timestamp: in.Timestamp, Topic: in.Topic, Partition: in.Partition, Offset: in.Offset}
		if len(in.Key) <= raftstore.MaxStateKeyBytes {
			dead.Key = in.Key
		}
		s.oversizeTaken = true
		return s.deadLetter(in, dead, fmt.Errorf("its outputs and state changes alone exceed a step's %d bytes; its value is left out here and stays in the input", raftstore.MaxStepBytes), emitOut, step)
	}
	return s.settle(state, in, 0, emitOut, step)
}

// settle runs r through the stages from the from-th on and keeps what it
// produced. A stage's error sends r, unchanged, to the dead-letter topic
// with the error in a header, and drops what r had changed; a record
// behind the watermark goes to the late topic.
func (s *stepper) settle(state *stepState, r Record, from int, emitOut func(string, Record, int32) error, step *raftstore.ProcStep) error {
	var pending []Record
	err := s.pipe.run(state, from, r, func(o Record) error { pending = append(pending, o); return nil })
	if err == nil && state.recErr != nil {
		err = state.recErr
	}
	if err == nil {
		for _, o := range pending {
			if err = emitOut(s.spec.Output, o, r.Partition); err != nil {
				break
			}
			step.Out++
		}
	}
	if err == nil {
		state.commitRecord()
		return nil
	}
	state.dropRecord()
	if errors.Is(err, errLate) {
		if err := emitOut(s.spec.LateTopic(), r, r.Partition); err != nil {
			return fmt.Errorf("a late record: %w", err) // never dropped silently
		}
		step.Late++
		return nil
	}
	return s.deadLetter(r, r, err, emitOut, step)
}

// deadLetter writes dead (r, or what is kept of it) to the dead-letter
// topic with the error and where r came from in headers.
func (s *stepper) deadLetter(r, dead Record, err error, emitOut func(string, Record, int32) error, step *raftstore.ProcStep) error {
	source := fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset)
	if r.Topic == "" {
		source = "emitted at the end of a step" // by a flushing stage
	}
	dead.Headers = append(append([]Header(nil), dead.Headers...), Header{Key: "error", Value: []byte(err.Error())},
		Header{Key: "source", Value: []byte(source)})
	if derr := emitOut(s.spec.DLQTopic(), dead, r.Partition); derr != nil {
		return fmt.Errorf("%w, and its dead letter: %w", err, derr) // never dropped silently
	}
	step.DLQ++
	return nil
}

func isAborted(aborted []raftstore.AbortedTxn, pid, offset int64) bool {
	for _, a := range aborted {
		if a.ProducerID == pid && offset >= a.FirstOffset && offset <= a.LastOffset {
			return true
		}
	}
	return false
}

// run sends r through the stages from i on; what comes out of the last
// goes to out.
func (p *pipeline) run(state *stepState, i int, r Record, out func(Record) error) error {
	if i == len(p.ops) {
		return out(r)
	}
	var err error
	perr := p.ops[i].Process(stageState{state, stagePrefix(i)}, r, func(o Record) {
		if err == nil {
			err = p.run(state, i+1, o, out)
		}
	})
	if perr != nil {
		if errors.Is(perr, errLate) {
			return perr
		}
		return fmt.Errorf("stage %d: %w", i+1, perr)
	}
	return err
}

// boundedFlusher is a Flusher that can stop early: flushSome emits at most
// max records, and stops once full reports the step full; what is left
// is emitted by the next steps.
type boundedFlusher interface {
	flushSome(st State, emit func(Record), max int, full func() bool) error
}

// flushesAlone tells whether a stage may have something to emit in a step
// that read no input: a windowed aggregate, whose watermark moves with the
// clock when idle partitions stop holding it back.
func (p *pipeline) flushesAlone() bool {
	for _, op := range p.ops {
		if _, ok := op.(boundedFlusher); ok {
			return true
		}
	}
	return false
}
