package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// ClientTLSConfig is the dialing side of one node's calls to another's
// admin API: it presents this Server's certificate when that certificate
// allows client authentication, and verifies the peer's chain for server
// authentication. With a trust store the peer's host name is not checked
// (a node is whoever holds a certificate from the trust store's CAs, which
// keeps dial overrides and NAT addresses working: give the cluster a CA of
// its own); without one the system's CAs verify the peer, host name
// included.
func (s *Server) ClientTLSConfig() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert := s.cur.Load().cert
			if !allowsUsage(cert.Leaf, x509.ExtKeyUsageClientAuth) {
				return &tls.Certificate{}, nil // no certificate
			}
			return cert, nil
		},
	}
	if s.cfg.TruststoreLocation == "" {
		return cfg // system roots, host name verified
	}
	// Verified in VerifyConnection, against the current trust store and
	// without a host name.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		return s.verifyPeer(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
	}
	return cfg
}

// PeerClientTLSConfig is the dialing side of raft's mutual TLS: the peer's
// certificate must chain to the trust store, allow both server and client
// authentication (a node's certificate, not a Kafka client's or a web
// server's), and map to one of PeerPrincipals when that is set. The host
// name is not checked.
func (s *Server) PeerClientTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // verified in VerifyConnection
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			return s.verifyNode(cs.PeerCertificates)
		},
	}
}

// PeerTLSConfig is the accepting side of raft's mutual TLS: a client
// certificate is required and checked as PeerClientTLSConfig checks the
// server's.
func (s *Server) PeerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*m.cert},
				ClientAuth:   tls.RequireAnyClientCert, // verified below
				VerifyConnection: func(cs tls.ConnectionState) error {
					return s.verifyNode(cs.PeerCertificates)
				},
			}, nil
		},
	}
}

// errNoPeerCert: the peer sent no certificate.
var errNoPeerCert = errors.New("the peer sent no certificate")

// ErrNotPeer: a peer's certificate is trusted, but its principal is not
// one of the configured peer principals.
var ErrNotPeer = errors.New("not a configured peer principal")

// verifyNode checks a node's chain for both usages and its principal
// against PeerPrincipals.
func (s *Server) verifyNode(chain []*x509.Certificate) error {
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := s.verifyPeer(chain, u); err != nil {
			return err
		}
	}
	if len(s.cfg.PeerPrincipals) == 0 {
		return nil
	}
	p, err := s.Principal(&tls.ConnectionState{PeerCertificates: chain})
	if err != nil {
		return fmt.Errorf("peer certificate %q: %w", chain[0].Subject.String(), err)
	}
	for _, want := range s.cfg.PeerPrincipals {
		if p == normalPrincipal(want) {
			return nil
		}
	}
	return fmt.Errorf("peer certificate %q is %s: %w (%s)", chain[0].Subject.String(), p, ErrNotPeer, s.cfg.key("peer.principals"))
}

// normalPrincipal is p with the User: type, which may be left out.
func normalPrincipal(p string) string {
	p = strings.TrimSpace(p)
	if strings.Contains(p, ":") {
		return p
	}
	return "User:" + p
}

// verifyPeer checks a peer's chain, leaf first, against the current trust
// store for usage.
func (s *Server) verifyPeer(chain []*x509.Certificate, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errNoPeerCert
	}
	m := s.cur.Load()
	if m.cas == nil {
		return fmt.Errorf("no %s to verify the peer's certificate with", s.cfg.key("truststore.location"))
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: m.cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("peer certificate %q: %w", chain[0].Subject.String(), err)
	}
	return nil
}

// allowsUsage reports whether a leaf certificate's extended key usages
// allow usage (none listed allows any).
func allowsUsage(c *x509.Certificate, usage x509.ExtKeyUsage) bool {
	if c == nil || len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == usage || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// CheckNodeCertificate reports whether this Server's certificate can be
// a node's on a link both ways (raft): it must allow server and client
// authentication.
func (s *Server) CheckNodeCertificate() error {
	leaf := s.cur.Load().cert.Leaf
	if !allowsUsage(leaf, x509.ExtKeyUsageServerAuth) || !allowsUsage(leaf, x509.ExtKeyUsageClientAuth) {
		return fmt.Errorf("the certificate of %s (%q) must allow both server and client authentication (extended key usages serverAuth,clientAuth, or none)",
			s.cfg.key("keystore.location"), leaf.Subject.String())
	}
	return nil
}

// PresentsClientCertificate reports whether ClientTLSConfig presents this
// Server's certificate: whether it allows client authentication.
func (s *Server) PresentsClientCertificate() bool {
	return allowsUsage(s.cur.Load().cert.Leaf, x509.ExtKeyUsageClientAuth)
}

// OwnPrincipal is the principal of this Server's own certificate, mapped
// as a peer's would be.
func (s *Server) OwnPrincipal() (string, error) {
	return s.Principal(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{s.cur.Load().cert.Leaf}})
}
