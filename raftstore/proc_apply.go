package raftstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/brokerd/brokerd/log"
)

type procDeployCmd struct {
	Req DeployRequest `json:"req"`
}

type procPauseCmd struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
}

type procDeleteCmd struct {
	Name string `json:"name"`
}

// ProcStep is one step of a processor: it moves the processor's input
// offsets from Start to End, changes its state and appends its outputs, in
// one raft entry, all or nothing. A step whose generation is not the
// processor's, or whose Start is not the committed offsets, is refused
// (ErrProcessorFenced): a retried or deposed leader's step never applies
// twice.
type ProcStep struct {
	Name       string `json:"name"`
	Generation uint64 `json:"generation"`
	// Seq is the number of steps the processor had committed when this
	// one was built (Stats.Steps): two steps built from the same state can
	// never both apply, whatever partitions they cover.
	Seq     int64            `json:"seq"`
	Now     int64            `json:"now"`
	Start   map[string]int64 `json:"start"`
	End     map[string]int64 `json:"end"`
	Puts    []StateEntry     `json:"puts,omitempty"`
	Deletes [][]byte         `json:"deletes,omitempty"`
	// Counts for the processor's stats.
	In, Out, DLQ, Late int64
	// Outputs are record batches for the processor's output topics,
	// without producer ids.
	Outputs []ProduceBatch `json:"-"`
}

// StateEntry is one state change of a step.
type StateEntry struct {
	Key   []byte `json:"k"`
	Value []byte `json:"v"`
}

// encodeStep lays a step out: type(1) headerLen(4) header(JSON) batches.
func encodeStep(st *ProcStep) ([]byte, error) {
	hdr, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode processor step: %w", err)
	}
	out := make([]byte, 0, 1+4+len(hdr)+batchesSize(st.Outputs))
	out = append(out, byte(cmdProcStep))
	out = binary.BigEndian.AppendUint32(out, uint32(len(hdr)))
	out = append(out, hdr...)
	return appendBatches(out, st.Outputs), nil
}

func decodeStep(buf []byte) (*ProcStep, error) {
	r := buf[1:]
	if len(r) < 4 {
		return nil, fmt.Errorf("%w: short processor step", ErrInvalidCommand)
	}
	n := binary.BigEndian.Uint32(r)
	r = r[4:]
	if uint64(n) > uint64(len(r)) {
		return nil, fmt.Errorf("%w: truncated processor step", ErrInvalidCommand)
	}
	var st ProcStep
	if err := json.Unmarshal(r[:n], &st); err != nil {
		return nil, fmt.Errorf("%w: decode processor step: %v", ErrInvalidCommand, err)
	}
	var err error
	if st.Outputs, err = readBatches(r[n:]); err != nil {
		return nil, err
	}
	return &st, nil
}

// MaxStepBytes bounds one step's raft entry; the processor splits work
// into more steps, never one step into several entries.
const MaxStepBytes = 8 << 20

// ApplyStep proposes a step and waits for its outcome. After an unknown
// outcome (ErrUnknownOutcome) the caller builds its next step from the
// processor as committed (Processor): the step either applied, and the
// next one starts after it, or it did not, and at most one of the two can
// ever apply (Seq).
func (s *Store) ApplyStep(ctx context.Context, st *ProcStep) error {
	data, err := encodeStep(st)
	if err != nil {
		return err
	}
	if len(data) > MaxStepBytes {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrStepTooLarge, len(data), MaxStepBytes)
	}
	if err := s.admitWrite(); err != nil {
		return err
	}
	f, err := s.proposeBounded(ctx, data)
	if err != nil {
		return err
	}
	if err := s.await(ctx, f); err != nil {
		return err
	}
	if e, ok := f.Response().(error); ok && e != nil {
		return e
	}
	return nil
}

func (f *fsm) applyProcDeploy(c *procDeployCmd, index uint64) any {
	r := c.Req
	if err := checkProcessorName(r.Name); err != nil {
		return err
	}
	if len(r.Spec) > maxProcessorSpecBytes || len(r.Inputs) == 0 || len(r.Outputs) == 0 {
		return fmt.Errorf("%w: processor %s: a spec of %d bytes, %d inputs, %d outputs", ErrInvalidProcessor, r.Name, len(r.Spec), len(r.Inputs), len(r.Outputs))
	}
	f.procs.mu.RLock()
	_, exists := f.procs.infos[r.Name]
	f.procs.mu.RUnlock()
	if exists {
		return fmt.Errorf("%w: %s", ErrProcessorExists, r.Name)
	}
	offsets := map[string]int64{}
	for i, name := range r.Inputs {
		if slices.Contains(r.Inputs[:i], name) {
			return fmt.Errorf("%w: processor %s lists input %s twice", ErrInvalidProcessor, r.Name, name)
		}
		f.mu.RLock()
		ts := f.topics[name]
		f.mu.RUnlock()
		if ts == nil {
			return fmt.Errorf("%w: input %s of processor %s", ErrUnknownTopic, name, r.Name)
		}
		for _, p := range ts.parts {
			at := p.log.StartOffset()
			if r.FromLatest {
				at = p.log.EndOffset()
			}
			offsets[p.key()] = at
		}
	}
	for _, name := range r.Outputs {
		if slices.Contains(r.Inputs, name) {
			return fmt.Errorf("%w: processor %s writes to its input %s", ErrInvalidProcessor, r.Name, name)
		}
		f.mu.RLock()
		ts := f.topics[name]
		f.mu.RUnlock()
		if ts == nil {
			return fmt.Errorf("%w: output %s of processor %s", ErrUnknownTopic, name, r.Name)
		}
	}
	info := &ProcessorInfo{Name: r.Name, Spec: r.Spec, Inputs: r.Inputs, Outputs: r.Outputs, Generation: index, Offsets: offsets}
	t := &f.procs
	t.mu.Lock()
	t.infos[r.Name] = info
	t.drop(r.Name) // anything a former deployment left
	t.dirty[r.Name] = true
	t.mu.Unlock()
	return index
}

func (f *fsm) applyProcPause(c *procPauseCmd) error {
	t := &f.procs
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.infos[c.Name]
	if p == nil {
		return fmt.Errorf("%w: %s", ErrUnknownProcessor, c.Name)
	}
	p.Paused = c.Paused
	t.dirty[c.Name] = true
	return nil
}

func (f *fsm) applyProcDelete(c *procDeleteCmd) error {
	t := &f.procs
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.infos[c.Name] == nil {
		return fmt.Errorf("%w: %s", ErrUnknownProcessor, c.Name)
	}
	delete(t.infos, c.Name)
	t.drop(c.Name)
	t.dirty[c.Name] = true
	return nil
}

// applyProcStep checks everything in the step first, then applies it.
func (f *fsm) applyProcStep(st *ProcStep, term int32) error {
	t := &f.procs
	t.mu.RLock()
	p := t.infos[st.Name]
	t.mu.RUnlock()
	if p == nil {
		return fmt.Errorf("%w: %s", ErrUnknownProcessor, st.Name)
	}
	if st.Generation != p.Generation {
		return fmt.Errorf("%w: processor %s step of generation %d, current %d", ErrProcessorFenced, st.Name, st.Generation, p.Generation)
	}
	if st.Seq != p.Stats.Steps {
		return fmt.Errorf("%w: processor %s step built after %d steps, %d committed", ErrProcessorFenced, st.Name, st.Seq, p.Stats.Steps)
	}
	if len(st.Start) == 0 || len(st.Start) != len(st.End) {
		return fmt.Errorf("%w: processor %s step moves %d partitions from %d", ErrInvalidCommand, st.Name, len(st.End), len(st.Start))
	}
	for key, from := range st.Start {
		name, idx, err := parsePartKey(key)
		if err != nil || !slices.Contains(p.Inputs, name) {
			return fmt.Errorf("%w: processor %s step reads %q, not one of its inputs", ErrInvalidCommand, st.Name, key)
		}
		if from != p.Offsets[key] {
			return fmt.Errorf("%w: processor %s step starts %s at %d, committed %d", ErrProcessorFenced, st.Name, key, from, p.Offsets[key])
		}
		to, ok := st.End[key]
		part := f.partition(name, idx)
		if !ok || part == nil || to < from || to > part.log.EndOffset() {
			return fmt.Errorf("%w: processor %s step moves %s from %d to %d", ErrInvalidCommand, st.Name, key, from, to)
		}
	}
	parts := make([]*partition, len(st.Outputs))
	for i, b := range st.Outputs {
		if !slices.Contains(p.Outputs, b.Topic) {
			return fmt.Errorf("%w: processor %s writes to %s, not one of its outputs", ErrInvalidCommand, st.Name, b.Topic)
		}
		if parts[i] = f.partition(b.Topic, b.Partition); parts[i] == nil {
			return fmt.Errorf("%w: %s-%d (output of processor %s)", ErrUnknownTopic, b.Topic, b.Partition, st.Name)
		}
		h, err := log.ValidateBatch(b.Data, 0)
		if err != nil {
			return fmt.Errorf("%w: processor %s output: %v", ErrInvalidCommand, st.Name, err)
		}
		if h.ProducerID >= 0 || h.Transactional() || h.Control() {
			return fmt.Errorf("%w: processor %s output batch with a producer id or control bits", ErrInvalidCommand, st.Name)
		}
	}
	for _, e := range st.Puts {
		if len(e.Key) == 0 || len(e.Key) > maxStateKeyBytes || len(e.Value) > maxStateValueBytes {
			return fmt.Errorf("%w: processor %s state entry of %d+%d bytes", ErrInvalidCommand, st.Name, len(e.Key), len(e.Value))
		}
	}
	for _, k := range st.Deletes {
		if len(k) == 0 || len(k) > maxStateKeyBytes {
			return fmt.Errorf("%w: processor %s state key of %d bytes", ErrInvalidCommand, st.Name, len(k))
		}
	}

	// Valid: apply it all. An error from here on is the disk's, and stops
	// the node rather than leave part of the step applied.
	for i, b := range st.Outputs {
		log.SetLeaderEpoch(b.Data, term)
		var base int64
		err := f.whileNoSpace("append to "+parts[i].key(), func() (err error) {
			base, err = parts[i].log.Append(b.Data, st.Now)
			return err
		})
		if err != nil {
			if errors.Is(err, log.ErrCorruptBatch) {
				err = fmt.Errorf("a validated batch was refused: %w", err)
			}
			return f.fail(fmt.Errorf("append processor %s output to %s: %w", st.Name, parts[i].key(), err))
		}
		f.noteEpoch(parts[i], term, base)
		f.dirty.parts[parts[i].key()] = parts[i]
		f.bytesSinceCheckpoint += int64(len(b.Data))
		f.appliedBytes.Add(int64(len(b.Data)))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, to := range st.End {
		p.Offsets[key] = to
	}
	d := t.delta[st.Name]
	if d == nil {
		d = map[string][]byte{}
		t.delta[st.Name] = d
	}
	for _, e := range st.Puts {
		v := e.Value
		if v == nil {
			v = []byte{}
		}
		d[string(e.Key)] = v
	}
	for _, k := range st.Deletes {
		d[string(k)] = nil
	}
	p.Stats.RecordsIn += st.In
	p.Stats.RecordsOut += st.Out
	p.Stats.DLQ += st.DLQ
	p.Stats.Late += st.Late
	p.Stats.Steps++
	p.Stats.LastStep = st.Now
	t.dirty[st.Name] = true
	return nil
}
