package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/batchtest"
)

func TestCountBatches(t *testing.T) {
	a := batchtest.New(batchtest.Options{}, []byte("1"), []byte("2"), []byte("3"))
	b := batchtest.New(batchtest.Options{}, []byte("4"))
	two := append(append([]byte(nil), a...), b...)
	tests := []struct {
		name string
		in   []byte
		want int64
	}{
		{"one batch", a, 3},
		{"two batches", two, 4},
		{"a truncated last batch is not counted", two[:len(two)-5], 3},
		{"short", a[:20], 0},
		{"empty", nil, 0},
	}
	for _, tt := range tests {
		if got := countBatches(tt.in); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestProduceAndFetchCounters(t *testing.T) {
	m := New(Options{Version: "t"})
	batch := batchtest.New(batchtest.Options{}, []byte("a"), []byte("b"))
	req := kmsg.NewPtrProduceRequest()
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "x", Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: batch}, {Partition: 1, Records: batch},
	}}}
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "x", Partitions: []kmsg.ProduceResponseTopicPartition{
		{Partition: 0}, {Partition: 1, ErrorCode: 6},
	}}}
	m.TallyProduce(req).Done(resp)
	if got := value(m.recordsIn); got != 2 {
		t.Errorf("records in %v, want 2 (the failed partition does not count)", got)
	}
	if got := value(m.bytesIn); got != float64(len(batch)) {
		t.Errorf("bytes in %v, want %d", got, len(batch))
	}
	m.TallyProduce(req).Done(nil) // acks=0: no response, everything counts
	if got := value(m.recordsIn); got != 6 {
		t.Errorf("records in after acks=0 %v, want 6", got)
	}

	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{{Topic: "x", Partitions: []kmsg.FetchResponseTopicPartition{
		{Partition: 0, RecordBatches: batch}, {Partition: 1},
	}}}
	m.FetchDone(fetch)
	if value(m.recordsOut) != 2 || value(m.bytesOut) != float64(len(batch)) {
		t.Errorf("fetch counters: %v records, %v bytes", value(m.recordsOut), value(m.bytesOut))
	}

	m.ObserveRequest("Produce", 0)
	m.CountError("Produce", "NOT_LEADER_OR_FOLLOWER")
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "brokerd_request_errors_total" {
			continue
		}
		for _, mt := range f.Metric {
			labels := map[string]string{}
			for _, l := range mt.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["api"] == "Produce" && labels["error"] == "NOT_LEADER_OR_FOLLOWER" && mt.Counter.GetValue() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Error("brokerd_request_errors_total{api=Produce,error=NOT_LEADER_OR_FOLLOWER} is not 1")
	}
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.Counter.GetValue()
}
