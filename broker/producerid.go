package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerID hands out idempotent producer ids through raft. A
// transactional id needs the transaction coordinator, which this broker
// does not run yet: those requests are refused with a clear error.
func (b *Broker) initProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		b.logger.Warn("transactional producer refused: transactions are not supported yet", "transactional_id", *r.TransactionalID)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if !b.store.IsLeader() {
		resp.ErrorCode = kerr.NotCoordinator.Code
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
