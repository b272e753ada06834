package wire

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errHandlerPanic marks a handler that panicked (already logged).
var errHandlerPanic = errors.New("wire: handler panicked")

// ErrCloseInOrder, wrapped in a handler's error, closes the connection in
// request order rather than at once: the responses to the requests before
// this one are written first, nothing after it is, and no further request
// is read. Kafka closes the connection of an acks=0 Produce it refuses
// this way (it answers one request at a time per connection).
var ErrCloseInOrder = errors.New("closing the connection in request order")

// handle runs the handler for one request in its own goroutine and records
// the outcome in its slot. A handler error or panic closes the connection.
func (c *conn) handle(s *slot) {
	resp, err := c.callHandler(s)
	s.req.order.release()
	if isNilResponse(resp) {
		resp = nil
	}
	if err == nil && resp != nil {
		err = prepareResponse(s.hdr, resp)
	}
	if errors.Is(err, ErrCloseInOrder) {
		// The writer closes the connection when it reaches this slot.
		c.logger().Debug("wire: closing connection after the responses before this request", append(requestAttrs(s.hdr), "err", err)...)
		c.stopReading()
		s.finish(nil, err)
		return
	}
	if err != nil {
		switch {
		case errors.Is(err, errHandlerPanic):
		case c.ctx.Err() != nil:
			c.logger().Debug("wire: handler failed on a closing connection", append(requestAttrs(s.hdr), "err", err)...)
		default:
			c.logger().Debug("wire: handler failed, closing connection", append(requestAttrs(s.hdr), "err", err)...)
		}
		// Close before publishing the outcome, so nothing queued after
		// this request is written.
		c.abort(err)
		resp = nil
	}
	s.finish(resp, err)
}

// callHandler calls the server's handler, turning a panic into an error
// after logging it with the request's identity and stack.
func (c *conn) callHandler(s *slot) (resp kmsg.Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.logger().Error("wire: handler panic", append(requestAttrs(s.hdr), "panic", r, "stack", string(debug.Stack()))...)
			resp, err = nil, fmt.Errorf("api key %d: %v: %w", s.hdr.APIKey, r, errHandlerPanic)
		}
	}()
	return c.srv.handler(c.hctx, s.req)
}

// prepareResponse checks that resp answers the request's api key and sets
// its version to the request's.
func prepareResponse(hdr RequestHeader, resp kmsg.Response) error {
	if resp.Key() != hdr.APIKey {
		return fmt.Errorf("handler answered api key %d with a response for key %d", hdr.APIKey, resp.Key())
	}
	resp.SetVersion(hdr.APIVersion)
	return nil
}

// isNilResponse reports whether resp is nil or a nil pointer in an interface
// (a handler returning a nil *kmsg.ProduceResponse for acks=0); both mean
// "send no response".
func isNilResponse(resp kmsg.Response) bool {
	if resp == nil {
		return true
	}
	v := reflect.ValueOf(resp)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
