package node

import (
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorCodes tallies the non-zero Kafka error codes in a response. Produce
// and Fetch, the hot paths, are read directly; every other response is
// walked by reflection for int16 fields called ErrorCode, which covers
// every kmsg response, including APIs added later.
func errorCodes(resp kmsg.Response) map[int16]int {
	var codes map[int16]int
	add := func(c int16) {
		if c == 0 {
			return
		}
		if codes == nil {
			codes = map[int16]int{}
		}
		codes[c]++
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	default:
		walkErrorCodes(reflect.ValueOf(resp), add, 0)
	}
	return codes
}

// walkErrorCodes finds ErrorCode fields in v, at most a few levels deep.
func walkErrorCodes(v reflect.Value, add func(int16), depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkErrorCodes(v.Elem(), add, depth)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !t.Field(i).IsExported() {
				continue
			}
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				add(int16(f.Int()))
				continue
			}
			switch f.Kind() {
			case reflect.Struct, reflect.Slice, reflect.Pointer:
				walkErrorCodes(f, add, depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walkErrorCodes(v.Index(i), add, depth+1)
		}
	}
}

// codeName is Kafka's name for an error code.
func codeName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("ERROR_CODE_%d", code)
}

// routineCodes are error codes that are steps of a protocol, not failures:
// JoinGroup v4+ answers a new member MEMBER_ID_REQUIRED before it joins,
// and members learn of a rebalance through REBALANCE_IN_PROGRESS.
var routineCodes = map[int16]bool{
	kerr.MemberIDRequired.Code:    true,
	kerr.RebalanceInProgress.Code: true,
}

// codesLevel is the level a response with these codes is logged at: Debug
// for protocol steps only, Info when the others are all retriable, else
// Warn.
func codesLevel(codes map[int16]int) slog.Level {
	routine, retriable := true, true
	for c := range codes {
		if routineCodes[c] {
			continue
		}
		routine = false
		if !kerr.IsRetriable(kerr.ErrorForCode(c)) {
			retriable = false
		}
	}
	switch {
	case routine:
		return slog.LevelDebug
	case retriable:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// describeCodes renders a tally as "NAME xN, NAME" in code order, and
// returns the names alone (a key for rate limiting).
func describeCodes(codes map[int16]int) (desc, names string) {
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, int(c))
	}
	sort.Ints(keys)
	var b, nb strings.Builder
	for i, c := range keys {
		if i > 0 {
			b.WriteString(", ")
			nb.WriteString(",")
		}
		b.WriteString(codeName(int16(c)))
		nb.WriteString(codeName(int16(c)))
		if n := codes[int16(c)]; n > 1 {
			fmt.Fprintf(&b, " x%d", n)
		}
	}
	return b.String(), nb.String()
}
