package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// groupCollector exports consumer-group lag: each group's committed offset
// against its partition's end offset.
type groupCollector struct {
	s                     Store
	perPartition          bool
	lag, partLag, commits *prometheus.Desc
}

func newGroupCollector(s Store, perPartition bool) *groupCollector {
	return &groupCollector{
		s:            s,
		perPartition: perPartition,
		lag: prometheus.NewDesc("brokerd_group_lag",
			"Records between a group's committed offsets and the end of their partitions, summed over the partitions it has committed.",
			[]string{"group"}, nil),
		partLag: prometheus.NewDesc("brokerd_group_partition_lag",
			"Records between a group's committed offset and the partition's end offset.",
			[]string{"group", "topic", "partition"}, nil),
		commits: prometheus.NewDesc("brokerd_group_committed_offset",
			"A group's committed offset.",
			[]string{"group", "topic", "partition"}, nil),
	}
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	if c.perPartition {
		ch <- c.partLag
		ch <- c.commits
	}
}

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.s.OffsetGroups() {
		var total int64
		for _, o := range c.s.GroupOffsets(g) {
			l, ok := c.s.Log(o.Topic, o.Partition)
			if !ok || o.Offset < 0 {
				continue // a deleted topic, or no position committed
			}
			lag := max(l.EndOffset()-o.Offset, 0)
			total += lag
			if c.perPartition {
				ps := strconv.Itoa(int(o.Partition))
				ch <- prometheus.MustNewConstMetric(c.partLag, prometheus.GaugeValue, float64(lag), g, o.Topic, ps)
				ch <- prometheus.MustNewConstMetric(c.commits, prometheus.GaugeValue, float64(o.Offset), g, o.Topic, ps)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(total), g)
	}
}
