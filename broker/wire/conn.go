package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// readBufferSize is each connection's read buffer: enough to take several
// small pipelined requests in one read, small enough for many idle
// connections. Frames larger than it are read straight into their own
// buffer.
const readBufferSize = 16 << 10

// conn is one client connection: a reader goroutine (serve), a writer
// goroutine (writeLoop) and one goroutine per request in flight (handle).
type conn struct {
	srv    *Server
	nc     net.Conn
	br     *bufio.Reader
	remote net.Addr
	src    *source // the client address in the frame pool
	dsrc   *source // and in the decode pool
	// logp is the connection's logger; the reader swaps it once the
	// principal is known while the writer and handlers read it.
	logp atomic.Pointer[slog.Logger]
	// listener is the listener the connection came in on; principal is
	// who the client is (AnonymousPrincipal until it authenticates).
	listener  Listener
	principal string
	// auth is the SASL state (auth.go); reader only.
	auth authState
	// rawConn is what sendfile writes Fetch records to; nil when the
	// connection cannot take it (sendFileConn).
	rawConn syscall.RawConn

	// ctx is what handlers get; cancelled when the connection closes.
	ctx    context.Context
	cancel context.CancelFunc
	// hctx is what handlers get: ctx, also cancelled when the client
	// closes its side, so parked handlers stop waiting for nobody.
	hctx    context.Context
	hcancel context.CancelFunc

	// queue holds the requests in flight in read order; tokens bounds how
	// many there are (the reader takes one before reading a frame, the
	// writer gives it back once the slot is answered or skipped).
	queue  chan *slot
	tokens chan struct{}
	// lastOrder is the order channel of the last request read (reader
	// only); the next request waits on it in Request.InOrder.
	lastOrder <-chan struct{}
	// lastDone is the done channel of the last request's slot (reader
	// only): closed once its handler returned (awaitSettled).
	lastDone <-chan struct{}
	// stopped is set once a request closes the connection in order
	// (Request.StopOrder): later requests' InOrder sections do not run.
	stopped atomic.Bool

	// mu orders Shutdown's stopReading against the reader's switching
	// between waiting for a frame and reading one, so that only a reader
	// waiting for a new frame is interrupted.
	mu            sync.Mutex
	awaiting      bool
	stopping      bool
	stopCh        chan struct{}
	frameDeadline time.Time // reader only

	// mute is when the reader may read again after a throttle (mute.go).
	mute muteClock

	// lastActive is the unix nano time of the last frame read or
	// response written, for the idle timeout.
	lastActive atomic.Int64

	closeOnce sync.Once
}

func newConn(s *Server, nc net.Conn, src, dsrc *source, l Listener) *conn {
	ctx, cancel := context.WithCancel(s.baseCtx)
	hctx, hcancel := context.WithCancel(ctx)
	n := s.cfg.MaxInFlightPerConn
	c := &conn{
		srv:       s,
		nc:        nc,
		br:        bufio.NewReaderSize(nc, readBufferSize),
		remote:    nc.RemoteAddr(),
		src:       src,
		dsrc:      dsrc,
		rawConn:   sendFileConn(nc),
		listener:  l,
		principal: AnonymousPrincipal,
		auth:      authState{srv: l.SASL},
		ctx:       ctx,
		cancel:    cancel,
		hctx:      hctx,
		hcancel:   hcancel,
		queue:     make(chan *slot, n),
		tokens:    make(chan struct{}, n),
		stopCh:    make(chan struct{}),
	}
	c.setLogger(s.log.With("remote", nc.RemoteAddr().String(), "listener", l.Name))
	if l.SASL != nil {
		c.auth.deadline = time.Now().Add(s.cfg.AuthTimeout)
	}
	c.touch()
	return c
}

// logger is the connection's logger.
func (c *conn) logger() *slog.Logger { return c.logp.Load() }

// setLogger replaces the connection's logger.
func (c *conn) setLogger(l *slog.Logger) { c.logp.Store(l) }

// serve runs the connection until it ends, then untracks it.
func (c *conn) serve() {
	if err := c.handshake(); err != nil {
		if graceful(err) || isTimeout(err) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Health checks and port scanners connect and go.
			c.logger().Debug("wire: closing connection", "reason", err)
		} else {
			c.srv.mu.Lock()
			c.srv.logRefusedLocked(c.remote.String(), err)
			c.srv.mu.Unlock()
		}
		c.abort(err)
		c.srv.untrack(c)
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		// Deferred calls run last first: a panic aborts the connection,
		// which lets the reader stop, which lets drainQueue finish.
		defer c.drainQueue()
		defer c.recoverPanic("writer")
		c.writeLoop()
	}()

	err := c.readLoopSafe()
	close(c.queue)
	delayed := errors.Is(err, errAuthFailed)
	if delayed {
		// The responses before the failure are written; then the
		// connection waits out the delay, answered and closed by the
		// server's delayed closer, not by a goroutine of its own.
		c.logger().Debug("wire: closing connection after a failed authentication", "reason", err)
	} else if graceful(err) {
		// Clean end of input, or Shutdown: the writer answers what is in
		// flight, then the connection closes.
		c.logger().Debug("wire: connection stops reading", "reason", err)
		if errors.Is(err, io.EOF) {
			// The client is gone: handlers parked on its behalf (a long
			// poll) stop waiting. What they answer is still written if the
			// client only half-closed.
			c.hcancel()
		}
	} else {
		c.logClose(err)
		c.abort(err)
	}
	<-writerDone
	if delayed {
		c.closeLater()
	} else {
		c.abort(nil)
	}
	c.srv.untrack(c)
}

// closeLater hands the connection to the server's delayed closer, which
// sends the failed authentication's answer and closes it after
// FailedAuthDelay. A connection already aborted stays closed.
func (c *conn) closeLater() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.srv.closer.add(c.nc, c.auth.failFrame, c.srv.cfg.FailedAuthDelay)
	})
}

// readLoopSafe runs readLoop, turning a panic into an error.
func (c *conn) readLoopSafe() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.logger().Error("wire: reader panic", "panic", r, "stack", string(debug.Stack()))
			err = errors.New("wire: reader panic")
		}
	}()
	return c.readLoop()
}

// recoverPanic logs a panic in one of the connection's goroutines and
// closes the connection instead of crashing the process.
func (c *conn) recoverPanic(where string) {
	if r := recover(); r != nil {
		c.logger().Error("wire: panic", "in", where, "panic", r, "stack", string(debug.Stack()))
		c.abort(errors.New("wire: panic in " + where))
	}
}

// abort closes the connection now: handlers' contexts are cancelled and
// unwritten responses are dropped. Safe to call many times.
func (c *conn) abort(error) {
	c.closeOnce.Do(func() {
		c.cancel()
		_ = c.nc.Close()
	})
}

// stopReading makes the reader stop before its next frame (Shutdown). A
// reader waiting for a frame's first byte is woken at once; one in the
// middle of a frame finishes reading and dispatching it first.
func (c *conn) stopReading() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return
	}
	c.stopping = true
	close(c.stopCh)
	if c.awaiting {
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// touch records activity for the idle timeout.
func (c *conn) touch() {
	c.lastActive.Store(time.Now().UnixNano())
}

// graceful reports whether the reader stopped in a way that lets the
// requests in flight be answered.
func graceful(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, errStopped)
}

// logClose logs why a connection is being closed: quietly for the ordinary
// reasons, at info for a misbehaving client.
func (c *conn) logClose(err error) {
	switch {
	case err == nil:
	case errors.Is(err, errIdle), errors.Is(err, errAuthTimeout), errors.Is(err, net.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, ErrServerClosed):
		c.logger().Debug("wire: closing connection", "reason", err)
	default:
		c.logger().Info("wire: closing connection", "reason", err)
	}
}

// isTimeout reports whether err is a deadline expiry.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
