package wire

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Throttling (client quotas, broker/throttle): a throttled request mutes
// its connection, as Kafka mutes a throttled channel: the reader reads no
// further frame until the throttle time has passed. While throttling is
// on (Config.Throttling) the reader also waits for the last request's
// handler before reading the next frame, so a request pipelined behind a
// throttled one stays in the socket until the mute has passed. With
// KIP-219 (the response versions whose ThrottleMillis the client honours
// after the response) the response goes out at once; for older versions
// the writer holds it back for the throttle time, as Kafka delays it,
// having encoded it and released its frame first (holdResponse).

// muteClock is a connection's "do not read before" time, in unix ns.
type muteClock struct{ until atomic.Int64 }

// extend moves the mute to at least t.
func (m *muteClock) extend(t int64) {
	for {
		cur := m.until.Load()
		if cur >= t || m.until.CompareAndSwap(cur, t) {
			return
		}
	}
}

// Throttle mutes r's connection for d from now; with delayResponse the
// response is also held back that long (a client that predates KIP-219
// learns of its throttle only by the delay). A handler calls it before it
// returns; it is a no-op outside a connection.
func (r *Request) Throttle(d time.Duration, delayResponse bool) {
	if d <= 0 {
		return
	}
	r.throttled, r.delayed = max(r.throttled, d), r.delayed || delayResponse
	if r.mute == nil {
		return
	}
	until := time.Now().Add(d).UnixNano()
	r.mute.extend(until)
	if delayResponse {
		r.delayUntil = max(r.delayUntil, until)
	}
}

// Throttled is the longest throttle Throttle gave the request, and whether
// its response is delayed.
func (r *Request) Throttled() (d time.Duration, delayed bool) { return r.throttled, r.delayed }

// awaitSettled waits, while throttling is on, for the handler of the last
// request read to return, so that any mute it set is known before the next
// frame is read.
func (c *conn) awaitSettled() error {
	if c.lastDone == nil || c.srv.cfg.Throttling == nil || !c.srv.cfg.Throttling() {
		return nil
	}
	select {
	case <-c.lastDone:
		return nil
	case <-c.stopCh:
		return errStopped
	case <-c.ctx.Done():
		return fmt.Errorf("waiting for the last request: %w", c.ctx.Err())
	}
}

// waitMuted waits out the connection's mute before the next frame is
// read; Shutdown or a close ends the wait.
func (c *conn) waitMuted() error {
	switch err := c.sleepUntil(c.mute.until.Load()); {
	case err == nil, errors.Is(err, errStopped):
		return err
	default:
		return fmt.Errorf("muted for a quota: %w", err)
	}
}

// sleepUntil waits until t (unix ns). Shutdown ends it early with
// errStopped, a close with the connection context's error.
func (c *conn) sleepUntil(t int64) error {
	d := time.Until(time.Unix(0, t))
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-c.stopCh:
		return errStopped
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// responseDelay is when s's response may go out (Throttle with
// delayResponse), 0 for at once.
func responseDelay(s *slot) int64 {
	if s.req == nil || s.req.delayUntil <= time.Now().UnixNano() {
		return 0
	}
	return s.req.delayUntil
}

// holdResponse holds what w buffers (a delayed response, encoded, its
// frame already released) until until; Shutdown ends the hold early, so
// the response goes out and the connection drains. It returns false if
// the connection closed meanwhile.
func (c *conn) holdResponse(until int64) bool {
	err := c.sleepUntil(until)
	return err == nil || errors.Is(err, errStopped)
}
