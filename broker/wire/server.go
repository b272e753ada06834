package wire

import (
	"context"
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
	decode   *budget // the decode pool

	// drain is closed when Shutdown starts (see Draining).
	drain *drainSignal
	// baseCtx parents every connection's context; it is cancelled by
	// Close and at the end of Shutdown.
	baseCtx    context.Context
	baseCancel context.CancelFunc

	mu     sync.Mutex
	ln     net.Listener
	conns  map[*conn]struct{}
	closed bool // Close or Shutdown called: no new connections
	// Refused connections are logged at Info at most once per
	// refusedLogEvery, with how many were refused since.
	refusedAt time.Time
	refused   int
	drained   chan struct{} // set by Shutdown, closed once conns is empty
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

// Listen binds cfg.Addr.
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
	if s.ln != nil {
		return fmt.Errorf("wire: already listening on %s", s.ln.Addr())
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("wire: listen on %q: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	return nil
}

// Addr returns the bound address (with ":0" resolved), or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
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

// Serve accepts connections until Close or Shutdown, then returns nil. It
// needs Listen first.
func (s *Server) Serve() error {
	s.mu.Lock()
	ln, closed := s.ln, s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	if ln == nil {
		return errors.New("wire: Serve called before Listen")
	}
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("wire: accept: %w", err)
			}
			// Out of file descriptors and the like: wait and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("wire: accept failed, retrying", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if c := s.track(nc); c != nil {
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
func (s *Server) track(nc net.Conn) *conn {
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
	c := newConn(s, nc, src, dsrc)
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
	ln := s.ln
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln == nil {
		return conns, nil
	}
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return conns, fmt.Errorf("wire: close listener: %w", err)
	}
	return conns, nil
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
