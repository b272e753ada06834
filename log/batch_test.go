package log

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseBatchHeaderMatchesKmsg(t *testing.T) {
	b := buildBatch(t, batchSpec{
		records:      recs(3, 10),
		codec:        CompressionGzip,
		baseOffset:   42,
		baseTs:       1_700_000_000_000,
		attrs:        attrTransactional,
		producerID:   7,
		baseSequence: 9,
	})
	SetLeaderEpoch(b, 5)
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var k kmsg.RecordBatch
	if err := k.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{
		BaseOffset: k.FirstOffset, Length: k.Length, LeaderEpoch: k.PartitionLeaderEpoch,
		Magic: k.Magic, CRC: uint32(k.CRC), Attributes: k.Attributes,
		LastOffsetDelta: k.LastOffsetDelta, BaseTimestamp: k.FirstTimestamp,
		MaxTimestamp: k.MaxTimestamp, ProducerID: k.ProducerID, ProducerEpoch: k.ProducerEpoch,
		BaseSequence: k.FirstSequence, RecordCount: k.NumRecords,
	}
	if h != want {
		t.Fatalf("parsed %+v\nkmsg   %+v", h, want)
	}
	if h.BaseOffset != 42 || h.LeaderEpoch != 5 || h.RecordCount != 3 || h.NextOffset() != 45 {
		t.Fatalf("unexpected header %+v", h)
	}
	if h.Size() != int64(len(b)) {
		t.Fatalf("Size %d, len %d", h.Size(), len(b))
	}
}

func TestParseBatchHeaderShort(t *testing.T) {
	for _, n := range []int{0, 1, 12, BatchHeaderSize - 1} {
		if _, err := ParseBatchHeader(make([]byte, n)); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%d bytes: err %v, want ErrCorruptBatch", n, err)
		}
	}
	if _, err := ParseBatchHeader(make([]byte, BatchHeaderSize)); err != nil {
		t.Errorf("full header: %v", err)
	}
}

func TestBatchHeaderAttributes(t *testing.T) {
	tests := []struct {
		attrs         int16
		codec         int8
		transactional bool
		control       bool
		appendTime    bool
	}{
		{0, CompressionNone, false, false, false},
		{1, CompressionGzip, false, false, false},
		{2 | attrTransactional, CompressionSnappy, true, false, false},
		{3 | attrTimestampType, CompressionLZ4, false, false, true},
		{4 | attrTransactional | attrControl, CompressionZstd, true, true, false},
	}
	for _, tt := range tests {
		h := BatchHeader{Attributes: tt.attrs}
		if h.Compression() != tt.codec || h.Transactional() != tt.transactional ||
			h.Control() != tt.control || h.LogAppendTime() != tt.appendTime {
			t.Errorf("attrs %#x: got codec %d txn %v control %v appendTime %v", tt.attrs,
				h.Compression(), h.Transactional(), h.Control(), h.LogAppendTime())
		}
	}
}

func TestSetBaseOffsetAndLeaderEpochKeepCRC(t *testing.T) {
	b := simpleBatch(t, 4, 100, 1000)
	SetBaseOffset(b, 1<<40)
	SetLeaderEpoch(b, 77)
	h, err := ValidateBatch(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 1<<40 || h.LeaderEpoch != 77 {
		t.Fatalf("header %+v", h)
	}
	short := []byte{1, 2, 3}
	SetBaseOffset(short, 5)
	SetLeaderEpoch(short, 5)
	if short[0] != 1 || short[2] != 3 {
		t.Fatal("short slice modified")
	}
}

func FuzzParseBatchHeader(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, BatchHeaderSize))
	f.Add(simpleBatch(f, 2, 10, 5))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseBatchHeader(b)
		if err != nil {
			if len(b) >= BatchHeaderSize {
				t.Fatalf("rejected %d bytes: %v", len(b), err)
			}
			return
		}
		if h.BaseOffset != int64(binary.BigEndian.Uint64(b)) || h.RecordCount != int32(binary.BigEndian.Uint32(b[57:])) {
			t.Fatalf("fields do not match the bytes: %+v", h)
		}
		_ = h.NextOffset()
		_ = h.Size()
	})
}
