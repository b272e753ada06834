package wire

import (
	"fmt"
	"math"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// flushThreshold: buffered responses are written once they reach this
	// size, even if more are ready.
	flushThreshold = 64 << 10
	// maxRetainedWriteBuf: a write buffer grown beyond this by a large
	// response is dropped after use rather than kept for the connection's
	// life.
	maxRetainedWriteBuf = 1 << 20
)

// writeLoop sends responses in request order. Ready responses are encoded
// into one buffer and written together; the buffer is flushed whenever the
// next response is not ready yet, so a lone response is never delayed. It
// returns when the reader has stopped and every slot is consumed, or when
// the connection is closed; serve then drains the slots left.
func (c *conn) writeLoop() {
	w := responseWriter{nc: c.nc, timeout: c.srv.cfg.WriteTimeout, onWrite: c.touch}
	for {
		var s *slot
		var ok bool
		select {
		case s, ok = <-c.queue:
		default:
			if err := w.flush(); err != nil {
				c.writeFailed(err)
				return
			}
			s, ok = <-c.queue
		}
		if !ok {
			if err := w.flush(); err != nil {
				c.writeFailed(err)
			}
			return
		}
		if !c.awaitSlot(s, &w) {
			s.unref()
			return
		}
		err := s.err
		if err == nil && s.resp != nil {
			if err = c.encode(&w, s); err != nil {
				// The responses before it are whole: send them.
				_ = w.flush()
			}
		}
		s.unref()
		<-c.tokens
		if err != nil {
			c.writeFailed(err)
			return
		}
	}
}

// awaitSlot waits for s's handler, flushing what is buffered first if it is
// not done yet. It returns false if the connection closed meanwhile.
func (c *conn) awaitSlot(s *slot, w *responseWriter) bool {
	select {
	case <-s.done:
		return true
	default:
	}
	if err := w.flush(); err != nil {
		c.writeFailed(err)
		return false
	}
	select {
	case <-s.done:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// encode appends s's response to w. kmsg's encoders trust the struct they
// are given, so a malformed response from a handler can panic: that closes
// the connection, like a handler error.
func (c *conn) encode(w *responseWriter, s *slot) (err error) {
	start := len(w.buf)
	defer func() {
		if r := recover(); r != nil {
			w.buf = w.buf[:start]
			c.log.Error("wire: encoding a response panicked", append(requestAttrs(s.hdr), "panic", r, "stack", string(debug.Stack()))...)
			err = fmt.Errorf("encoding response to api key %d: %v", s.hdr.APIKey, r)
		}
	}()
	return w.append(s.hdr.CorrelationID, s.hdr.APIKey, s.resp)
}

// writeFailed closes the connection after a failed write or a handler
// error (which the handler already logged).
func (c *conn) writeFailed(err error) {
	if c.ctx.Err() == nil {
		c.log.Debug("wire: closing connection", "reason", err)
	}
	c.abort(err)
}

// drainQueue drops the slots left when the writer stops early; it returns
// once the reader has stopped and closed the queue, so the connection must
// be closing.
func (c *conn) drainQueue() {
	for s := range c.queue {
		s.unref()
	}
}

// responseWriter batches encoded responses into one buffer per write.
type responseWriter struct {
	nc      net.Conn
	timeout time.Duration
	onWrite func()
	buf     []byte
}

// append encodes one response and writes the buffer if it is full enough.
func (w *responseWriter) append(corrID int32, apiKey int16, resp kmsg.Response) error {
	start := len(w.buf)
	w.buf = AppendResponse(w.buf, corrID, apiKey, resp)
	if n := len(w.buf) - start - 4; n > math.MaxInt32 {
		w.buf = w.buf[:start]
		return fmt.Errorf("response to api key %d is %d bytes, more than a frame can hold", apiKey, n)
	}
	if len(w.buf) >= flushThreshold {
		return w.flush()
	}
	return nil
}

// flush writes what is buffered under the write timeout.
func (w *responseWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	_, err := w.nc.Write(w.buf)
	if cap(w.buf) > maxRetainedWriteBuf {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	if err != nil {
		return fmt.Errorf("writing responses: %w", err)
	}
	w.onWrite()
	return nil
}
