package raftstore

import (
	"testing"
	"time"
)

// TestRefusalLog: one line per reason per interval, with the count held
// back.
func TestRefusalLog(t *testing.T) {
	var r refusalLog
	t0 := time.Unix(1000, 0)
	if ok, _ := r.allow("a", t0); !ok {
		t.Fatal("first refusal not logged")
	}
	for i := 0; i < 5; i++ {
		if ok, _ := r.allow("a", t0.Add(time.Second)); ok {
			t.Fatal("a refusal logged within the interval")
		}
	}
	if ok, _ := r.allow("b", t0.Add(time.Second)); !ok {
		t.Fatal("another reason held back")
	}
	if ok, n := r.allow("a", t0.Add(refusalInterval+time.Second)); !ok || n != 5 {
		t.Fatalf("after the interval: %v, %d suppressed, want true, 5", ok, n)
	}
}
