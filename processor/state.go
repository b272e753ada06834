package processor

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// stepState is the state a step's stages see: the committed state (read
// through get), the step's changes, and the current record's changes,
// which join the step's only if the record went through without error.
type stepState struct {
	get    func(key []byte) ([]byte, bool, error)
	scan   func(prefix []byte, fn func(k, v []byte) bool) error
	step   map[string][]byte // nil value: deleted
	record map[string][]byte
}

func newStepState(get func([]byte) ([]byte, bool, error), scan func([]byte, func(k, v []byte) bool) error) *stepState {
	return &stepState{get: get, scan: scan, step: map[string][]byte{}, record: map[string][]byte{}}
}

// scanAll merges the committed entries under prefix with the step's and
// the record's changes, in key order.
func (s *stepState) scanAll(prefix string, fn func(k, v []byte) bool) error {
	merged := map[string][]byte{}
	if s.scan != nil {
		if err := s.scan([]byte(prefix), func(k, v []byte) bool { merged[string(k)] = slices.Clone(v); return true }); err != nil {
			return err
		}
	}
	for _, layer := range []map[string][]byte{s.step, s.record} {
		for k, v := range layer {
			if strings.HasPrefix(k, prefix) {
				merged[k] = v
			}
		}
	}
	keys := make([]string, 0, len(merged))
	for k, v := range merged {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !fn([]byte(k), merged[k]) {
			return nil
		}
	}
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

func (s *stepState) dropRecord() { clear(s.record) }

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
	st.s.record[st.prefix+string(key)] = value
}

func (st stageState) Delete(key []byte) { st.s.record[st.prefix+string(key)] = nil }

func (st stageState) Scan(prefix []byte, fn func(key, value []byte) bool) error {
	return st.s.scanAll(st.prefix+string(prefix), func(k, v []byte) bool { return fn(k[len(st.prefix):], v) })
}

func stagePrefix(i int) string { return strconv.Itoa(i) + "/" }
