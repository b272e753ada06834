package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/log"
)

// hasTransactionalBatch reports whether a Produce request carries a
// transactional batch (Kafka's ProduceRequest.hasTransactionalRecords):
// such a request needs a transactional id, and Write on it. It reads the
// attributes of each partition's batch header, no more; a batch too short
// for a header is the handler's to refuse.
func hasTransactionalBatch(r *kmsg.ProduceRequest) bool {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			h, err := log.ParseBatchHeader(r.Topics[i].Partitions[j].Records)
			if err == nil && h.Transactional() {
				return true
			}
		}
	}
	return false
}

// txnIDOf is the request's transactional id, "" for none (and before
// Produce v3, which has no field for one).
func txnIDOf(r *kmsg.ProduceRequest) string {
	if r.TransactionID == nil {
		return ""
	}
	return *r.TransactionID
}
