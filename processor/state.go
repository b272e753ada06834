package processor

import (
	"maps"
	"strconv"
)

// stepState is the state a step's stages see: the committed state (read
// through get), the step's changes, and the current record's changes,
// which join the step's only if the record went through without error.
type stepState struct {
	get    func(key []byte) ([]byte, bool, error)
	step   map[string][]byte // nil value: deleted
	record map[string][]byte
}

func newStepState(get func([]byte) ([]byte, bool, error)) *stepState {
	return &stepState{get: get, step: map[string][]byte{}, record: map[string][]byte{}}
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

func stagePrefix(i int) string { return strconv.Itoa(i) + "/" }
