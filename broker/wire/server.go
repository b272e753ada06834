package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler answers one request. A nil response with nil error means "send no
// response" (Produce with acks=0). A non-nil error closes the connection
// (after logging it). The response's version is set to the request's by the
// server. ctx is cancelled when the connection closes or the server is
// closed.
type Handler func(ctx context.Context, req *Request) (kmsg.Response, error)

// Versions reports the advertised version range of an API key; ok=false means
// unsupported.
type Versions func(key int16) (min, max int16, ok bool)

// Server accepts Kafka client connections and serves their requests.
type Server struct {
	cfg      Config
	versions Versions
	handler  Handler
	log      *slog.Logger
	budget   *budget // the frame pool
	// closer closes connections whose authentication failed, after
	// FailedAuthDelay.
	closer delayedCloser
	decode *budget // the decode pool

	// drain is closed when Shutdown starts (see Draining).
	drain *drainSignal
	// baseCtx parents every connection's context; it is cancelled by
	// Close and at the end of Shutdown.
	baseCtx    context.Context
	baseCancel context.CancelFunc

	mu     sync.Mutex
	lns    []*boundListener
	conns  map[*conn]struct{}
	closed bool // Close or Shutdown called: no new connections
	// Refused connections are logged at Info at most once per
	// refusedLogEvery, with how many were refused since.
	refusedAt time.Time
	refused   int
	// Failed authentications likewise (authlog.go).
	authFailAt time.Time
	authFailed int
	drained    chan struct{} // set by Shutdown, closed once conns is empty
}

// NewServer returns a server for cfg (zero fields take their defaults) that
// answers requests with h and advertises versions. Both functions must be
// non-nil; Listen reports an error otherwise.
func NewServer(cfg Config, versions Versions, h Handler) *Server {
	cfg = cfg.withDefaults()
	drain := &drainSignal{ch: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), drainKey{}, drain))
	frames, decode := newPools(cfg)
	return &Server{
		drain:      drain,
		cfg:        cfg,
		versions:   versions,
		handler:    h,
		log:        cfg.Logger,
		budget:     frames,
		decode:     decode,
		baseCtx:    ctx,
		baseCancel: cancel,
		conns:      make(map[*conn]struct{}),
	}
}

// Listen binds every listener of cfg (or cfg.Addr).
func (s *Server) Listen() error {
	if s.versions == nil || s.handler == nil {
		return errors.New("wire: server needs a Versions and a Handler")
	}
	if err := s.cfg.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServerClosed
	}
	if s.lns != nil {
		return fmt.Errorf("wire: already listening on %s", s.lns[0].ln.Addr())
	}
	lns := make([]*boundListener, 0, len(s.cfg.Listeners))
	for _, l := range s.cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			for _, b := range lns {
				_ = b.ln.Close()
			}
			return fmt.Errorf("wire: listener %s: listen on %q: %w", l.Name, l.Addr, err)
		}
		lns = append(lns, &boundListener{Listener: l, ln: ln})
	}
	s.lns = lns
	return nil
}

// Addr returns the first listener's bound address (with ":0" resolved), or
// nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lns == nil {
		return nil
	}
	return s.lns[0].ln.Addr()
}

// ConnCount returns the number of open client connections.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// InFlightBytes returns the part of the in-flight memory budget currently
// charged, for metrics.
func (s *Server) InFlightBytes() int64 {
	return s.budget.inUse() + s.decode.inUse()
}

// Serve accepts connections on every listener until Close or Shutdown,
// then returns nil. It needs Listen first. A listener that fails on its
// own makes it return that error at once.
func (s *Server) Serve() error {
	s.mu.Lock()
	lns, closed := s.lns, s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	if lns == nil {
		return errors.New("wire: Serve called before Listen")
	}
	errs := make(chan error, len(lns))
	for _, l := range lns {
		go func() { errs <- s.accept(l) }()
	}
	for range lns {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// accept accepts connections on one listener until the server closes.
func (s *Server) accept(l *boundListener) error {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("wire: accept on listener %s: %w", l.Name, err)
			}
			// Out of file descriptors and the like: wait and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("wire: accept failed, retrying", "listener", l.Name, "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if c := s.track(nc, l); c != nil {
			go c.serve()
		}
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track registers a new connection, or closes it and returns nil when the
// server is closing.
func (s *Server) track(nc net.Conn, l *boundListener) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = nc.Close()
		return nil
	}
	src, err := s.budget.openConn(sourceKeyOf(nc.RemoteAddr()))
	if err != nil {
		s.logRefusedLocked(nc.RemoteAddr().String(), err)
		_ = nc.Close()
		return nil
	}
	dsrc, _ := s.decode.openConn(sourceKeyOf(nc.RemoteAddr())) // no limit
	if l.TLS != nil {
		nc = tls.Server(nc, l.TLS)
	}
	c := newConn(s, nc, src, dsrc, l.Listener)
	s.conns[c] = struct{}{}
	return c
}

// refusedLogEvery rate-limits the log of refused connections: a client
// that redials in a loop would otherwise write a line per attempt.
const refusedLogEvery = 10 * time.Second

// logRefusedLocked logs a refused connection, at Info at most once per
// refusedLogEvery.
func (s *Server) logRefusedLocked(remote string, err error) {
	s.refused++
	if now := time.Now(); now.Sub(s.refusedAt) >= refusedLogEvery {
		s.log.Info("wire: refusing connection", "remote", remote, "reason", err, "refused_since_last_log", s.refused)
		s.refusedAt, s.refused = now, 0
		return
	}
	s.log.Debug("wire: refusing connection", "remote", remote, "reason", err)
}

// untrack forgets a finished connection.
func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; ok {
		s.budget.closeConn(c.src)
		s.decode.closeConn(c.dsrc)
	}
	delete(s.conns, c)
	if len(s.conns) == 0 && s.drained != nil {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

// stopAccepting marks the server closed, closes the listener and returns the
// open connections.
func (s *Server) stopAccepting() ([]*conn, error) {
	s.mu.Lock()
	s.closed = true
	lns := s.lns
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range lns {
		if err := l.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("wire: close listener %s: %w", l.Name, err))
		}
	}
	return conns, errors.Join(errs...)
}

// Close stops accepting and closes every connection at once, cancelling the
// contexts of the handlers still running; their responses are dropped. It
// does not wait for handlers to return.
func (s *Server) Close() error {
	conns, err := s.stopAccepting()
	s.baseCancel()
	for _, c := range conns {
		c.abort(ErrServerClosed)
	}
	s.closer.closeAll()
	return err
}

// Shutdown stops accepting and stops reading new requests, lets the requests
// in flight finish and their responses be written, then closes the
// connections. If ctx ends first, it closes everything as Close does and
// returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.drained == nil {
		s.drained = make(chan struct{})
		if len(s.conns) == 0 {
			close(s.drained)
		}
	}
	drained := s.drained
	s.mu.Unlock()

	s.drain.close()
	conns, err := s.stopAccepting()
	for _, c := range conns {
		c.stopReading()
	}
	select {
	case <-drained:
		s.baseCancel()
		return err
	case <-ctx.Done():
		if cerr := s.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return errors.Join(fmt.Errorf("wire: shutdown: %w", ctx.Err()), err)
	}
}
