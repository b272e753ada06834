package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// partitionCollector exports each partition's log size and offsets.
type partitionCollector struct {
	s                      Store
	size, start, end, segs *prometheus.Desc
}

func newPartitionCollector(s Store) *partitionCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "partition", name), help, []string{"topic", "partition"}, nil)
	}
	return &partitionCollector{
		s:     s,
		size:  d("log_size_bytes", "Bytes in the partition's segments."),
		start: d("start_offset", "The partition's log start offset."),
		end:   d("end_offset", "The partition's log end offset (high watermark: everything below it is committed)."),
		segs:  d("segments", "Segments in the partition's log."),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.start
	ch <- c.end
	ch <- c.segs
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.s.Topics() {
		for p := int32(0); p < t.Partitions; p++ {
			l, ok := c.s.Log(t.Name, p)
			if !ok {
				continue
			}
			ps := strconv.Itoa(int(p))
			ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(l.Size()), t.Name, ps)
			ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, float64(l.StartOffset()), t.Name, ps)
			ch <- prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, float64(l.EndOffset()), t.Name, ps)
			ch <- prometheus.MustNewConstMetric(c.segs, prometheus.GaugeValue, float64(len(l.Segments())), t.Name, ps)
		}
	}
}
