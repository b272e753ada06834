package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ClientTLSConfig is the dialing side of a mutual-TLS link between nodes
// (raft, one node's calls to another's admin API): it presents this
// Server's certificate and verifies the peer's chain against the trust
// store, both as they stand at the handshake (a reload applies to the next
// connection). The peer's host name is not checked: a node is whoever
// holds a certificate from the trust store's CAs, which keeps dial
// overrides and NAT addresses working. Give the cluster a CA of its own.
func (s *Server) ClientTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified in VerifyConnection, against the current trust store
		// and without a host name.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			return s.verifyPeer(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
		},
	}
}

// errNoPeerCert: the peer sent no certificate.
var errNoPeerCert = errors.New("the peer sent no certificate")

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
