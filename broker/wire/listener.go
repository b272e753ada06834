package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/brokerd/brokerd/broker/sasl"
)

// DefaultListenerName is the name of the listener a Config without
// Listeners gets.
const DefaultListenerName = "PLAINTEXT"

// AnonymousPrincipal is the principal of a client that did not
// authenticate (Kafka's User:ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// Listener is one Kafka listener of a Server.
type Listener struct {
	// Name is the listener's name, as in Kafka's listeners (PLAINTEXT,
	// SSL, CLIENT, ...); requests carry it (Request.Listener).
	Name string
	// Addr is the TCP address to bind.
	Addr string
	// TLS, if set, makes the listener's connections TLS: the handshake
	// completes before the first request is read. Such connections never
	// use sendfile.
	TLS *tls.Config
	// Principal gives the principal of a TLS connection from its
	// handshake; an error refuses the connection. Nil, or a plaintext
	// listener: AnonymousPrincipal.
	Principal func(*tls.ConnectionState) (string, error)
	// SASL, if set, makes the listener's clients authenticate with SASL
	// (after TLS, if set) before anything but ApiVersions is answered;
	// the principal is then User:<name>.
	SASL *sasl.Server
}

// boundListener is a Listener with its socket.
type boundListener struct {
	Listener
	ln net.Listener
}

// ListenerAddr returns the bound address of the listener called name, or
// nil.
func (s *Server) ListenerAddr(name string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lns {
		if l.Name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// handshake completes a TLS connection's handshake, within the read
// timeout and until Shutdown, and sets its principal. A plaintext
// connection has nothing to do.
func (c *conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.ReadTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("wire: TLS handshake on listener %s: %w", c.listener.Name, err)
	}
	if c.listener.Principal == nil {
		return nil
	}
	st := tc.ConnectionState()
	p, err := c.listener.Principal(&st)
	if err != nil {
		return fmt.Errorf("wire: authentication on listener %s: %w", c.listener.Name, err)
	}
	if p == "" {
		return errors.New("wire: empty principal")
	}
	c.principal = p
	c.setLogger(c.logger().With("principal", p))
	c.logger().Debug("wire: TLS connection", "version", tls.VersionName(st.Version), "cipher", tls.CipherSuiteName(st.CipherSuite))
	return nil
}
