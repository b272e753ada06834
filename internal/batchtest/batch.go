package batchtest

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options describe a batch's producer fields and timestamps.
type Options struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Timestamp     int64 // base timestamp, unix ms
	Transactional bool
}

// NoProducer is a batch from a non-idempotent producer.
var NoProducer = Options{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// New builds an uncompressed batch holding one record per value (keys nil).
// Record i has timestamp delta i.
func New(o Options, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = int64(i)
		r.Value = v
		recs = appendRecord(recs, r)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	if o.Transactional {
		b.Attributes |= 0x10
	}
	b.LastOffsetDelta = int32(len(values) - 1)
	b.FirstTimestamp = o.Timestamp
	b.MaxTimestamp = o.Timestamp + int64(len(values)-1)
	b.ProducerID = o.ProducerID
	b.ProducerEpoch = o.ProducerEpoch
	b.FirstSequence = o.BaseSequence
	b.NumRecords = int32(len(values))
	b.Records = recs
	out := b.AppendTo(nil)
	return Seal(out)
}

// Seal fixes a batch's length and CRC after its bytes were edited.
func Seal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// appendRecord encodes one record with its varint length prefix, as it sits
// inside a batch.
func appendRecord(dst []byte, r kmsg.Record) []byte {
	// kmsg writes the Length field as given: measure the body first.
	r.Length = 0
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(dst)
}
