package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID hands out producer ids through raft: a fresh id for an
// idempotent producer, or the transactional id's id with a bumped epoch.
func (b *Broker) initProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !b.store.IsLeader() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	if r.TransactionalID != nil {
		b.initTxnProducer(ctx, r, resp)
		return resp
	}
	pid, epoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		pid, epoch = r.ProducerID, r.ProducerEpoch
	}
	res, err := b.store.InitProducerID(ctx, pid, epoch)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
	return resp
}
