package raftstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/tlsconf"
)

// Raft's connections between nodes go through streamLayer: plain TCP, as
// raft's own TCPStreamLayer, or mutual TLS (brokerd.raft.tls.enabled).
// raft.NetworkTransport runs unchanged on top of either.

// handshakeTimeout bounds an accepted connection's TLS handshake.
const handshakeTimeout = 10 * time.Second

// tlsRecordHandshake is the first byte of a TLS connection (a handshake
// record). Raft's own RPC types are small numbers, so a plaintext node
// that reads it has been dialed by a TLS peer.
const tlsRecordHandshake = 0x16

// streamLayer is raft.StreamLayer over TCP, with mutual TLS when tls is
// set: both sides present a certificate and verify the other's against the
// trust store.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	tls       *tlsconf.Server // nil: plaintext
	logger    *slog.Logger
	refusals  refusalLog
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// newStreamLayer listens on bind. advertise (nil: the bound address) is
// what peers dial and must be a concrete IP address.
func newStreamLayer(bind string, advertise net.Addr, tlsSrv *tlsconf.Server, logger *slog.Logger) (*streamLayer, error) {
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{Listener: l, advertise: advertise, tls: tlsSrv, logger: logger}
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		l.Close()
		return nil, fmt.Errorf("raft address %v is not one peers can dial (set brokerd.raft.advertised.listener)", s.Addr())
	}
	return s, nil
}

// Addr is the advertised address.
func (s *streamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.Listener.Addr()
}

// Dial connects to a peer; with TLS the handshake is done here, so that a
// refused peer shows in raft's log as a dial error saying why.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.Dial("tcp", string(addr))
	if err != nil || s.tls == nil {
		return conn, err
	}
	tc := tls.Client(conn, s.tls.PeerClientTLSConfig())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("raft TLS handshake with %s: %w%s", addr, err, handshakeHint(err))
	}
	return tc, nil
}

// Accept returns the next peer connection. With TLS the handshake runs at
// its first read, on raft's goroutine for the connection, not here.
func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if s.tls == nil {
		return &plainConn{Conn: c, logger: s.logger, refusals: &s.refusals}, nil
	}
	return &tlsConn{Conn: tls.Server(c, s.tls.PeerTLSConfig()), logger: s.logger, refusals: &s.refusals}, nil
}

// tlsConn is an accepted TLS connection that logs a failed handshake with
// what to do about it.
type tlsConn struct {
	*tls.Conn
	logger   *slog.Logger
	refusals *refusalLog
	once     sync.Once
	err      error
}

func (c *tlsConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		if err := c.HandshakeContext(ctx); err != nil {
			c.err = fmt.Errorf("raft TLS handshake: %w", err)
			hint := handshakeHint(err)
			if ok, suppressed := c.refusals.allow(hint, time.Now()); ok {
				c.logger.Warn("refused a raft connection"+hint, "remote", c.RemoteAddr().String(), "err", err, "suppressed", suppressed)
			}
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *tlsConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *tlsConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// handshakeHint says what a failed handshake most likely means.
func handshakeHint(err error) string {
	var rec tls.RecordHeaderError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &rec):
		return ": the peer speaks plaintext raft; set brokerd.raft.tls.enabled=true on every node"
	case errors.As(err, &unknown):
		return ": the peer's certificate is not signed by a CA of brokerd.raft.tls.truststore.location"
	}
	return ""
}

// errTLSPeer: a plaintext node was dialed by a node that runs raft over
// TLS.
var errTLSPeer = errors.New("a peer dialed with TLS, but this node runs raft in plaintext")

// plainConn is an accepted plaintext connection that recognizes a TLS
// peer by its first byte, logs it, and closes the connection.
type plainConn struct {
	net.Conn
	logger   *slog.Logger
	refusals *refusalLog
	checked  bool // raft reads a connection from one goroutine
}

func (c *plainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.checked && n > 0 {
		c.checked = true
		if p[0] == tlsRecordHandshake {
			if ok, suppressed := c.refusals.allow("tls", time.Now()); ok {
				c.logger.Warn("refused a raft connection: the peer runs raft over TLS; set brokerd.raft.tls.enabled=true (and its key and trust stores) on this node too",
					"remote", c.RemoteAddr().String(), "suppressed", suppressed)
			}
			c.Conn.Close()
			return 0, errTLSPeer
		}
	}
	return n, err
}
