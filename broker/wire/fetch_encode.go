package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch response is mostly record bytes read from the log. Encoding it
// with kmsg copies them into the write buffer; this encoder writes the
// same bytes (the tests compare it with kmsg for every version) but
// leaves record batches of minRefBytes or more where they are: the frame
// goes out with writev, the encoded parts around the referenced records.

// minRefBytes: smaller record batches are cheaper to copy than to give
// writev a vector of their own.
const minRefBytes = 16 << 10

// maxFetchEncoded is the last Fetch version encodeFetch knows; later ones
// may add fields, and go through kmsg.
const maxFetchEncoded = 16

// piece is what appendFetch produced: encoded bytes (enc) or record bytes
// to reference (ref).
type fetchEncoder struct {
	dst []byte
	// refs are record bytes placed, in order, at offsets of dst.
	refs     []ref
	refBytes int
	flexible bool
	// files are records left in files, by partition (SetFetchFiles);
	// part counts the partitions encoded.
	files []FileRecords
	part  int
}

// ref is record bytes placed at offset at of the encoded bytes: data, or
// records left in a file.
type ref struct {
	at   int
	data []byte
	file *FileRecords
}

// fetchEncodable reports whether encodeFetch writes resp exactly as
// kmsg would: it writes every field a broker sets, not unknown tags.
func fetchEncodable(resp *kmsg.FetchResponse) bool {
	// Versions past 16 may add fields this encoder does not know.
	if resp.Version > maxFetchEncoded || resp.UnknownTags.Len() > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
			for k := range p.AbortedTransactions {
				if p.AbortedTransactions[k].UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	for i := range resp.Brokers {
		if resp.Brokers[i].UnknownTags.Len() > 0 {
			return false
		}
	}
	return true
}

func (e *fetchEncoder) i16(v int16) { e.dst = binary.BigEndian.AppendUint16(e.dst, uint16(v)) }
func (e *fetchEncoder) i32(v int32) { e.dst = binary.BigEndian.AppendUint32(e.dst, uint32(v)) }
func (e *fetchEncoder) i64(v int64) { e.dst = binary.BigEndian.AppendUint64(e.dst, uint64(v)) }
func (e *fetchEncoder) uvarint(v uint32) {
	e.dst = binary.AppendUvarint(e.dst, uint64(v))
}

// arrayLen writes an array's length; null only when nullable and nil.
func (e *fetchEncoder) arrayLen(n int, null bool) {
	switch {
	case e.flexible && null:
		e.uvarint(0)
	case e.flexible:
		e.uvarint(uint32(n) + 1)
	case null:
		e.i32(-1)
	default:
		e.i32(int32(n))
	}
}

func (e *fetchEncoder) str(s string) {
	if e.flexible {
		e.uvarint(uint32(len(s)) + 1)
	} else {
		e.i16(int16(len(s)))
	}
	e.dst = append(e.dst, s...)
}

func (e *fetchEncoder) nullableStr(s *string) {
	switch {
	case s != nil:
		e.str(*s)
	case e.flexible:
		e.uvarint(0)
	default:
		e.i16(-1)
	}
}

// records writes a nullable bytes field, referencing large ones.
func (e *fetchEncoder) records(b []byte) {
	e.arrayLen(len(b), b == nil)
	if len(b) >= minRefBytes {
		e.refs = append(e.refs, ref{at: len(e.dst), data: b})
		e.refBytes += len(b)
		return
	}
	e.dst = append(e.dst, b...)
}

// tagged writes one tagged field: its tag, its size, then what fill
// writes. The body is small (a few ints), so it is written first and its
// size put in front of it.
func (e *fetchEncoder) tagged(tag uint32, fill func()) {
	e.uvarint(tag)
	at := len(e.dst)
	fill()
	body := append([]byte(nil), e.dst[at:]...)
	e.dst = binary.AppendUvarint(e.dst[:at], uint64(len(body)))
	e.dst = append(e.dst, body...)
}

// encodeFetch appends resp's body (as kmsg's AppendTo would write it) to
// e.dst, referencing large record batches.
func (e *fetchEncoder) encodeFetch(v *kmsg.FetchResponse) {
	version := v.Version
	e.flexible = version >= 12
	if version >= 1 {
		e.i32(v.ThrottleMillis)
	}
	if version >= 7 {
		e.i16(v.ErrorCode)
		e.i32(v.SessionID)
	}
	e.arrayLen(len(v.Topics), false)
	for i := range v.Topics {
		t := &v.Topics[i]
		if version <= 12 {
			e.str(t.Topic)
		} else {
			e.dst = append(e.dst, t.TopicID[:]...)
		}
		e.arrayLen(len(t.Partitions), false)
		for j := range t.Partitions {
			e.partition(version, &t.Partitions[j])
		}
		if e.flexible {
			e.uvarint(0) // the topic's tagged fields
		}
	}
	if e.flexible {
		if len(v.Brokers) == 0 {
			e.uvarint(0)
			return
		}
		e.uvarint(1)
		e.tagged(0, func() {
			e.arrayLen(len(v.Brokers), false)
			for i := range v.Brokers {
				b := &v.Brokers[i]
				e.i32(b.NodeID)
				e.str(b.Host)
				e.i32(b.Port)
				e.nullableStr(b.Rack)
				e.uvarint(0)
			}
		})
	}
}

func (e *fetchEncoder) partition(version int16, p *kmsg.FetchResponseTopicPartition) {
	e.i32(p.Partition)
	e.i16(p.ErrorCode)
	e.i64(p.HighWatermark)
	if version >= 4 {
		e.i64(p.LastStableOffset)
	}
	if version >= 5 {
		e.i64(p.LogStartOffset)
	}
	if version >= 4 {
		e.arrayLen(len(p.AbortedTransactions), p.AbortedTransactions == nil)
		for _, a := range p.AbortedTransactions {
			e.i64(a.ProducerID)
			e.i64(a.FirstOffset)
			if e.flexible {
				e.uvarint(0)
			}
		}
	}
	if version >= 11 {
		e.i32(p.PreferredReadReplica)
	}
	if i := e.part; i < len(e.files) && e.files[i].File != nil {
		f := &e.files[i]
		e.arrayLen(f.Len, false)
		e.refs = append(e.refs, ref{at: len(e.dst), file: f})
		e.refBytes += f.Len
	} else {
		e.records(p.RecordBatches)
	}
	e.part++
	if !e.flexible {
		return
	}
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := uint32(0)
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	e.uvarint(n)
	if diverging {
		e.tagged(0, func() { e.i32(p.DivergingEpoch.Epoch); e.i64(p.DivergingEpoch.EndOffset); e.uvarint(0) })
	}
	if leader {
		e.tagged(1, func() { e.i32(p.CurrentLeader.LeaderID); e.i32(p.CurrentLeader.LeaderEpoch); e.uvarint(0) })
	}
	if snapshot {
		e.tagged(2, func() { e.i64(p.SnapshotID.EndOffset); e.i32(p.SnapshotID.Epoch); e.uvarint(0) })
	}
}
