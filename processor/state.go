package processor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/raftstore"
)

// stepState is the state a step's stages see: the committed state (read
// through get), the step's changes, and the current record's changes,
// which join the step's only if the record went through without error.
type stepState struct {
	// now is the leader's clock at the step (ms): idleness is judged by
	// it, and the outcome is committed with the step.
	now int64
	// unread names the input partitions ("topic/partition") that had
	// unread input when the step began: one with no event time yet holds
	// the watermark back, so that reading partitions one after another
	// cannot make another's older records late.
	unread map[string]bool
	get    func(key []byte) ([]byte, bool, error)
	scan   func(prefix []byte, fn func(k, v []byte) bool) error
	step   map[string][]byte // nil value: deleted
	record map[string][]byte
	// recErr is set when the current record wrote a state entry the
	// store would refuse: the record goes to the dead-letter topic.
	recErr error
	// bytes estimates what the changes take in the step's raft entry
	// (keys and values are base64 there); it counts every change made,
	// dropped or overwritten ones too.
	bytes int
}

func newStepState(get func([]byte) ([]byte, bool, error), scan func([]byte, func(k, v []byte) bool) error) *stepState {
	return &stepState{get: get, scan: scan, step: map[string][]byte{}, record: map[string][]byte{}}
}

// scanAll merges the committed entries under prefix with the step's and
// the record's changes, in key order, streaming: it stops reading the
// committed state as soon as fn returns false.
func (s *stepState) scanAll(prefix string, fn func(k, v []byte) bool) error {
	pending := map[string][]byte{}
	for _, layer := range []map[string][]byte{s.step, s.record} {
		for k, v := range layer {
			if strings.HasPrefix(k, prefix) {
				pending[k] = v
			}
		}
	}
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	stopped := false
	// emitPending sends the pending keys below limit ("" means all).
	emitPending := func(limit string, all bool) {
		for len(keys) > 0 && !stopped && (all || keys[0] < limit) {
			k := keys[0]
			keys = keys[1:]
			if v := pending[k]; v != nil && !fn([]byte(k), v) {
				stopped = true
			}
		}
	}
	if s.scan != nil {
		err := s.scan([]byte(prefix), func(k, v []byte) bool {
			emitPending(string(k), false)
			if stopped {
				return false
			}
			if len(keys) > 0 && keys[0] == string(k) {
				return true // a pending change hides it; sent in turn
			}
			if !fn(k, v) {
				stopped = true
			}
			return !stopped
		})
		if err != nil {
			return err
		}
	}
	emitPending("", true)
	return nil
}

func (s *stepState) lookup(k string) ([]byte, bool, error) {
	if v, ok := s.record[k]; ok {
		return v, v != nil, nil
	}
	if v, ok := s.step[k]; ok {
		return v, v != nil, nil
	}
	return s.get([]byte(k))
}

// commitRecord keeps the current record's changes; dropRecord discards
// them (the record went to the dead-letter topic).
func (s *stepState) commitRecord() {
	maps.Copy(s.step, s.record)
	clear(s.record)
}

func (s *stepState) dropRecord() {
	clear(s.record)
	s.recErr = nil
}

// stageState is one stage's view: its keys are prefixed with the stage's
// index, so stages never share a key.
type stageState struct {
	s      *stepState
	prefix string
}

func (st stageState) Get(key []byte) ([]byte, bool, error) {
	return st.s.lookup(st.prefix + string(key))
}

func (st stageState) Put(key, value []byte) {
	if value == nil {
		value = []byte{}
	}
	k := st.prefix + string(key)
	if len(k) > raftstore.MaxStateKeyBytes || len(value) > raftstore.MaxStateValueBytes {
		st.s.recErr = fmt.Errorf("a state entry of %d+%d bytes (at most %d+%d)", len(k), len(value), raftstore.MaxStateKeyBytes, raftstore.MaxStateValueBytes)
		return
	}
	st.s.record[k] = value
	st.s.bytes += (len(k)+len(value))*4/3 + 16
}

func (st stageState) Delete(key []byte) {
	k := st.prefix + string(key)
	st.s.record[k] = nil
	st.s.bytes += len(k)*4/3 + 8
}

func (st stageState) Scan(prefix []byte, fn func(key, value []byte) bool) error {
	return st.s.scanAll(st.prefix+string(prefix), func(k, v []byte) bool { return fn(k[len(st.prefix):], v) })
}

func stagePrefix(i int) string { return strconv.Itoa(i) + "/" }
