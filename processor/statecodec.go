package processor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// The stored forms of aggregates and windows: a version byte, then fixed
// big-endian fields (floats as IEEE 754 bits). Version 1:
//
//	aggregate  1 count(8) sum(8) min(8) max(8)
//	window     1 end(8) count(8) sum(8) min(8) max(8)
//
// State written before these forms existed is JSON, which starts with '{'
// and is still read.
const stateV1 = 1

const aggBytes = 32

func appendAggFields(b []byte, s *aggState) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.Count))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.Sum))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.Min))
	return binary.BigEndian.AppendUint64(b, math.Float64bits(s.Max))
}

func readAggFields(b []byte) aggState {
	return aggState{
		Count: int64(binary.BigEndian.Uint64(b)),
		Sum:   math.Float64frombits(binary.BigEndian.Uint64(b[8:])),
		Min:   math.Float64frombits(binary.BigEndian.Uint64(b[16:])),
		Max:   math.Float64frombits(binary.BigEndian.Uint64(b[24:])),
	}
}

func encodeAgg(s *aggState) []byte {
	return appendAggFields(append(make([]byte, 0, 1+aggBytes), stateV1), s)
}

var errStateForm = errors.New("unknown stored form")

func decodeAgg(v []byte) (aggState, error) {
	var s aggState
	switch {
	case len(v) == 1+aggBytes && v[0] == stateV1:
		return readAggFields(v[1:]), nil
	case len(v) > 0 && v[0] == '{':
		err := json.Unmarshal(v, &s)
		return s, err
	}
	return s, fmt.Errorf("%w of %d bytes", errStateForm, len(v))
}

func encodeWindow(e *windowEntry) []byte {
	b := append(make([]byte, 0, 1+8+aggBytes), stateV1)
	b = binary.BigEndian.AppendUint64(b, uint64(e.End))
	return appendAggFields(b, &e.Agg)
}

func decodeWindow(v []byte) (windowEntry, error) {
	var e windowEntry
	switch {
	case len(v) == 1+8+aggBytes && v[0] == stateV1:
		e.End = int64(binary.BigEndian.Uint64(v[1:]))
		e.Agg = readAggFields(v[9:])
		return e, nil
	case len(v) > 0 && v[0] == '{':
		err := json.Unmarshal(v, &e)
		return e, err
	}
	return e, fmt.Errorf("%w of %d bytes", errStateForm, len(v))
}
