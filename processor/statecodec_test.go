package processor

import (
	"errors"
	"testing"
)

// TestStateForms: aggregates and windows round-trip through their stored
// form, the JSON form of earlier versions is still read, and anything else
// is an error.
func TestStateForms(t *testing.T) {
	a := aggState{Count: 3, Sum: 4.5, Min: -1, Max: 7}
	if got, err := decodeAgg(encodeAgg(&a)); err != nil || got != a {
		t.Fatalf("aggregate: %+v %v", got, err)
	}
	w := windowEntry{End: 60_000, Agg: a}
	if got, err := decodeWindow(encodeWindow(&w)); err != nil || got != w {
		t.Fatalf("window: %+v %v", got, err)
	}
	if got, err := decodeAgg([]byte(`{"count":3,"sum":4.5,"min":-1,"max":7}`)); err != nil || got != a {
		t.Fatalf("aggregate from JSON: %+v %v", got, err)
	}
	if got, err := decodeWindow([]byte(`{"end":60000,"agg":{"count":3,"sum":4.5,"min":-1,"max":7}}`)); err != nil || got != w {
		t.Fatalf("window from JSON: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {}, {2}, append([]byte{stateV1}, make([]byte, 31)...), []byte(`{"count":`)} {
		if _, err := decodeAgg(bad); err == nil {
			t.Errorf("aggregate %q decoded", bad)
		}
		if _, err := decodeWindow(bad); err == nil {
			t.Errorf("window %q decoded", bad)
		}
	}
	if _, err := decodeAgg([]byte{9}); !errors.Is(err, errStateForm) {
		t.Errorf("unknown form: %v", err)
	}
}
