package processor

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brokerd/brokerd/raftstore"
)

// Metrics are the processors' Prometheus series. The counters come from
// the replicated stats at scrape time, so they do not restart when
// leadership moves; step latency is measured where the steps run.
type Metrics struct {
	stepLatency *prometheus.HistogramVec
}

// stateSizer is a store that can count a processor's state entries.
type stateSizer interface {
	ProcessorStateSize(name string) (int, error)
}

// NewMetrics registers the processors' series with reg, reading s.
func NewMetrics(reg prometheus.Registerer, s Store) *Metrics {
	m := &Metrics{stepLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "brokerd", Subsystem: "processor", Name: "step_duration_seconds",
		Help:    "Time to read, run and commit one processor step, on the leader.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
	}, []string{"processor"})}
	reg.MustRegister(m.stepLatency, &collector{store: s})
	return m
}

func (m *Metrics) observeStep(name string, _ *raftstore.ProcStep, took time.Duration) {
	if m != nil {
		m.stepLatency.WithLabelValues(name).Observe(took.Seconds())
	}
}

type collector struct{ store Store }

var (
	descIn    = prometheus.NewDesc("brokerd_processor_records_in_total", "Input records a processor's committed steps consumed.", []string{"processor"}, nil)
	descOut   = prometheus.NewDesc("brokerd_processor_records_out_total", "Records a processor's committed steps wrote to its output topic.", []string{"processor"}, nil)
	descDLQ   = prometheus.NewDesc("brokerd_processor_dlq_records_total", "Records a processor sent to its dead-letter topic (<name>.dlq).", []string{"processor"}, nil)
	descLate  = prometheus.NewDesc("brokerd_processor_late_records_total", "Records behind the watermark sent to <name>.late.", []string{"processor"}, nil)
	descSteps = prometheus.NewDesc("brokerd_processor_steps_total", "Committed steps.", []string{"processor"}, nil)
	descLag   = prometheus.NewDesc("brokerd_processor_lag_records", "Input records not yet consumed (up to each partition's last stable offset).", []string{"processor"}, nil)
	descState = prometheus.NewDesc("brokerd_processor_state_entries", "Keyed state entries.", []string{"processor"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIn, descOut, descDLQ, descLate, descSteps, descLag, descState} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.store.Processors() {
		st := p.Stats
		ch <- prometheus.MustNewConstMetric(descIn, prometheus.CounterValue, float64(st.RecordsIn), p.Name)
		ch <- prometheus.MustNewConstMetric(descOut, prometheus.CounterValue, float64(st.RecordsOut), p.Name)
		ch <- prometheus.MustNewConstMetric(descDLQ, prometheus.CounterValue, float64(st.DLQ), p.Name)
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(st.Late), p.Name)
		ch <- prometheus.MustNewConstMetric(descSteps, prometheus.CounterValue, float64(st.Steps), p.Name)
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(Lag(c.store, p)), p.Name)
		if s, ok := c.store.(stateSizer); ok {
			if n, err := s.ProcessorStateSize(p.Name); err == nil {
				ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, float64(n), p.Name)
			}
		}
	}
}

// Lag is how many input records processor p has not consumed yet, up to
// each input partition's last stable offset.
func Lag(s Store, p *raftstore.ProcessorInfo) int64 {
	var lag int64
	for _, name := range p.Inputs {
		t, ok := s.Topic(name)
		if !ok {
			continue
		}
		for i := int32(0); i < t.Partitions; i++ {
			lso := s.LastStableOffset(name, i)
			from := p.Offsets[name+"/"+strconv.Itoa(int(i))]
			if l, ok := s.Log(name, i); ok {
				from = max(from, l.StartOffset())
			}
			lag += max(0, lso-from)
		}
	}
	return lag
}
