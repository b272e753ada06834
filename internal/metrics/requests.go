package metrics

import (
	"time"
)

// ObserveRequest counts one request of api and records how long it took.
func (m *Metrics) ObserveRequest(api string, took time.Duration) {
	m.requests.WithLabelValues(api).Inc()
	m.latency.WithLabelValues(api).Observe(took.Seconds())
}

// CountError counts one failed request of api; code is the Kafka error
// name (UNKNOWN_TOPIC_OR_PARTITION, ...) or "handler".
func (m *Metrics) CountError(api, code string) {
	m.reqErrors.WithLabelValues(api, code).Inc()
}
