package raftstore

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/log"
)

func TestControlBatch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := controlBatch(42, 3, commit, 1700000000000, 0)
		h, err := log.ValidateBatch(b, 1<<20)
		if err != nil {
			t.Fatalf("commit=%v: control batch does not validate: %v", commit, err)
		}
		if !h.Control() || !h.Transactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.RecordCount != 1 {
			t.Fatalf("commit=%v: header %+v", commit, h)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil {
			t.Fatalf("marker key: %v", err)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(rec.Value); err != nil {
			t.Fatalf("marker value: %v", err)
		}
		want := kmsg.ControlRecordKeyTypeAbort
		if commit {
			want = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Type != want {
			t.Fatalf("marker type %v, want %v", key.Type, want)
		}
	}
}
