package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brokerd/brokerd/log"
)

// openCacheCollector exports the log package's process-wide cache of open
// segment files (log.DefaultOpenCache), read at scrape time.
type openCacheCollector struct {
	open, idle, capacity, reopens, evictions, limitHits *prometheus.Desc
}

func newOpenCacheCollector() *openCacheCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "log", name), help, nil, nil)
	}
	return &openCacheCollector{
		open:      d("open_segments", "Partition segments with their files open (3 files each): active, dirty, being read, or idle in the cache."),
		idle:      d("idle_open_segments", "Open segments nothing uses, kept open by the cache; closed first when room is needed."),
		capacity:  d("open_files_capacity", "Files of idle segments the cache keeps open at most (a quarter of the soft RLIMIT_NOFILE)."),
		reopens:   d("segment_reopens_total", "Sealed segments opened again after the cache had closed them."),
		evictions: d("segment_evictions_total", "Idle segments closed to stay within the cache's capacity."),
		limitHits: d("open_file_limit_hits_total", "Segment opens that found the process out of file descriptors (EMFILE, ENFILE)."),
	}
}

func (c *openCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.idle, c.capacity, c.reopens, c.evictions, c.limitHits} {
		ch <- d
	}
}

func (c *openCacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := log.DefaultOpenCache().Stats()
	g := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	n := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	g(c.open, st.OpenSegments)
	g(c.idle, st.IdleSegments)
	g(c.capacity, st.Capacity)
	n(c.reopens, st.Opens)
	n(c.evictions, st.Evictions)
	n(c.limitHits, st.LimitHits)
}
