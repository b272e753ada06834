package metrics

import (
	"github.com/brokerd/brokerd/raftstore"

	"github.com/prometheus/client_golang/prometheus"
)

// StorageStore is what the storage collector reads; *raftstore.Store has
// it.
type StorageStore interface {
	StorageStats() raftstore.StorageStats
}

type storageCollector struct {
	s                                StorageStore
	free, reserve, refusing, refused *prometheus.Desc
}

func newStorageCollector(s StorageStore) *storageCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "storage", name), help, nil, nil)
	}
	return &storageCollector{
		s:        s,
		free:     d("free_bytes", "Bytes free on the data directory's filesystem at the last sample (every 500 ms)."),
		reserve:  d("min_free_bytes", "The free space kept in reserve (brokerd.storage.min.free.bytes as applied): below it, writes are refused."),
		refusing: d("refusing", "1 while writes are refused with KAFKA_STORAGE_ERROR for lack of disk space, else 0."),
		refused:  d("refused_total", "Writes (produce requests, processor steps, topic and partition creations) refused for lack of disk space."),
	}
}

func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.free, c.reserve, c.refusing, c.refused} {
		ch <- d
	}
}

func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.StorageStats()
	refusing := 0.0
	if st.Refusing {
		refusing = 1
	}
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(st.FreeBytes))
	ch <- prometheus.MustNewConstMetric(c.reserve, prometheus.GaugeValue, float64(st.ReserveBytes))
	ch <- prometheus.MustNewConstMetric(c.refusing, prometheus.GaugeValue, refusing)
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.Refused))
}
