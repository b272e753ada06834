package metrics

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/log"
)

// countBatches returns the records in the whole v2 batches at the start of
// b. It stops at a truncated batch (a Fetch response may end with one) or
// at anything that does not parse.
func countBatches(b []byte) int64 {
	var n int64
	for len(b) >= log.BatchHeaderSize {
		h, err := log.ParseBatchHeader(b)
		if err != nil || h.Length <= 0 || h.Size() > int64(len(b)) {
			break
		}
		if h.RecordCount > 0 {
			n += int64(h.RecordCount)
		}
		b = b[h.Size():]
	}
	return n
}

// producePart is one partition's share of a Produce request.
type producePart struct {
	topic     string
	partition int32
	bytes     int64
	records   int64
}

// ProduceTally holds a Produce request's sizes, counted before the handler
// runs (the record bytes alias the request frame, which is not kept).
type ProduceTally struct {
	m     *Metrics
	parts []producePart
}

// TallyProduce counts the bytes and records of each partition in req.
func (m *Metrics) TallyProduce(req *kmsg.ProduceRequest) ProduceTally {
	t := ProduceTally{m: m}
	for _, tp := range req.Topics {
		for _, p := range tp.Partitions {
			t.parts = append(t.parts, producePart{
				topic: tp.Topic, partition: p.Partition,
				bytes: int64(len(p.Records)), records: countBatches(p.Records),
			})
		}
	}
	return t
}

// Done adds the partitions that resp reports appended to the bytes-in and
// records-in counters. A nil resp (acks=0) counts every partition: nothing
// reports otherwise.
func (t ProduceTally) Done(resp *kmsg.ProduceResponse) {
	var failed map[producePart]bool
	if resp != nil {
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 {
					if failed == nil {
						failed = map[producePart]bool{}
					}
					failed[producePart{topic: tp.Topic, partition: p.Partition}] = true
				}
			}
		}
	}
	var bytes, records int64
	for _, p := range t.parts {
		if failed[producePart{topic: p.topic, partition: p.partition}] {
			continue
		}
		bytes += p.bytes
		records += p.records
	}
	t.m.bytesIn.Add(float64(bytes))
	t.m.recordsIn.Add(float64(records))
}

// FetchDone adds a Fetch response's record bytes and records to the
// bytes-out and records-out counters.
func (m *Metrics) FetchDone(resp *kmsg.FetchResponse) {
	var bytes, records int64
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			bytes += int64(len(p.RecordBatches))
			records += countBatches(p.RecordBatches)
		}
	}
	m.bytesOut.Add(float64(bytes))
	m.recordsOut.Add(float64(records))
}
