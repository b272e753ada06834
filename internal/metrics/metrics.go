package metrics

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "brokerd"

// Metrics is one node's registry and the instruments the request path
// updates.
type Metrics struct {
	reg *prometheus.Registry

	requests   *prometheus.CounterVec
	reqErrors  *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	bytesIn    prometheus.Counter
	recordsIn  prometheus.Counter
	bytesOut   prometheus.Counter
	recordsOut prometheus.Counter
}

// Options configure New.
type Options struct {
	// Version is reported by brokerd_build_info.
	Version string
}

// New returns a registry with the Go runtime and process collectors, build
// info, and the request instruments.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "requests_total",
		Help: "Kafka requests handled, by API.",
	}, []string{"api"})
	m.reqErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "request_errors_total",
		Help: "Kafka requests that failed, by API and error: a Kafka error code name in the response, or \"handler\" when the connection was closed.",
	}, []string{"api", "error"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Time from a request's decoding to its response, by API (Fetch includes its long-poll wait).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
	}, []string{"api"})
	m.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "produce_bytes_total",
		Help: "Record batch bytes appended by Produce requests (bytes in).",
	})
	m.recordsIn = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "produce_records_total",
		Help: "Records appended by Produce requests (records in).",
	})
	m.bytesOut = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "fetch_bytes_total",
		Help: "Record batch bytes returned by Fetch responses (bytes out).",
	})
	m.recordsOut = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "fetch_records_total",
		Help: "Records in the whole batches returned by Fetch responses (records out).",
	})
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the labels name the build.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.reqErrors, m.latency,
		m.bytesIn, m.recordsIn, m.bytesOut, m.recordsOut, build,
	)
	return m
}

// Registry is the node's registry, for other packages' collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:          m.reg,
		ErrorHandling:     promhttp.ContinueOnError,
		Timeout:           10 * time.Second,
		EnableOpenMetrics: false,
	})
}

// FetchSessionStats is what the fetch-session collector reads.
type FetchSessionStats func() (sessions, partitions int, evictions int64)

// RegisterFetchSessions exports the fetch-session cache under Kafka's
// names: sessions, partitions cached, and evictions.
func (m *Metrics) RegisterFetchSessions(stats FetchSessionStats) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "incremental_fetch_sessions",
			Help: "Incremental fetch sessions (KIP-227) cached on this node (Kafka's NumIncrementalFetchSessions).",
		}, func() float64 { s, _, _ := stats(); return float64(s) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "incremental_fetch_partitions_cached",
			Help: "Partitions held by all incremental fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).",
		}, func() float64 { _, p, _ := stats(); return float64(p) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "incremental_fetch_session_evictions_total",
			Help: "Fetch sessions evicted to make room for new ones (max.incremental.fetch.session.cache.slots).",
		}, func() float64 { _, _, e := stats(); return float64(e) }),
	)
}

// RegisterServer exports the Kafka listener's connection count and the
// in-flight request memory in use.
func (m *Metrics) RegisterServer(conns func() int, inFlightBytes func() int64, sentFromFiles func() int64) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections",
			Help: "Open Kafka client connections.",
		}, func() float64 { return float64(conns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "inflight_request_bytes",
			Help: "Request frame bytes held in flight, charged to queued.max.request.bytes.",
		}, func() float64 { return float64(inFlightBytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "fetch_sendfile_bytes_total",
			Help: "Record bytes Fetch responses sent straight from segment files with sendfile (plain TCP, reads of 16 KiB or more).",
		}, func() float64 { return float64(sentFromFiles()) }),
	)
}

// QuotaStats reports, per quota key, the responses throttled and the
// throttle time given in ms (broker.Broker.QuotaStats).
type QuotaStats func() (keys []string, throttled, throttleMs []int64)

// RegisterQuotas exports client quota enforcement: throttled responses
// and throttle time by quota key (counters), and the quota entities held.
func (m *Metrics) RegisterQuotas(stats QuotaStats, entities func() int) {
	m.reg.MustRegister(&quotaCollector{
		stats: stats,
		throttled: prometheus.NewDesc(namespace+"_quota_throttled_responses_total",
			"Responses that carried a throttle because the client went over a quota, by quota key.", []string{"quota"}, nil),
		throttleMs: prometheus.NewDesc(namespace+"_quota_throttle_time_ms_total",
			"Throttle time given to clients over a quota (ms), by quota key; its rate is the ms of throttling per second.", []string{"quota"}, nil),
	}, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "quota_entities",
		Help: "Client quota entities (user, client id, or both) in the replicated state.",
	}, func() float64 { return float64(entities()) }))
}

type quotaCollector struct {
	stats                 QuotaStats
	throttled, throttleMs *prometheus.Desc
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.throttled
	ch <- c.throttleMs
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	keys, n, ms := c.stats()
	for i, k := range keys {
		ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(n[i]), k)
		ch <- prometheus.MustNewConstMetric(c.throttleMs, prometheus.CounterValue, float64(ms[i]), k)
	}
}
