package wire

import (
	"context"
	"sync"
)

// drainKey is the context key under which a handler's context carries the
// server's draining channel.
type drainKey struct{}

// drainSignal is closed when Shutdown starts.
type drainSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (d *drainSignal) close() { d.once.Do(func() { close(d.ch) }) }

// Draining returns a channel that is closed when the server starts a
// graceful shutdown. Handlers that park (a long-polling Fetch, a JoinGroup
// waiting for a rebalance) should answer at once with what they have, so
// Shutdown does not wait out their timeouts. Outside a Server it returns
// nil, which never fires.
func Draining(ctx context.Context) <-chan struct{} {
	if d, ok := ctx.Value(drainKey{}).(*drainSignal); ok {
		return d.ch
	}
	return nil
}
