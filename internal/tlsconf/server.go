package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// ClientAuth values, as Kafka's ssl.client.auth.
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// Config is the ssl.* settings of the SSL listeners.
type Config struct {
	// KeystoreLocation is a PEM file with the private key and the
	// certificate chain (ssl.keystore.location).
	KeystoreLocation string
	// TruststoreLocation is a PEM bundle of the CAs client certificates
	// must chain to (ssl.truststore.location); needed when ClientAuth is
	// not none.
	TruststoreLocation string
	// ClientAuth is none, requested or required (ssl.client.auth; ""
	// is none).
	ClientAuth string
	// PrincipalRules is ssl.principal.mapping.rules ("" is DEFAULT).
	PrincipalRules string
	// PeerPrincipals, on a link between nodes (raft), lists the principals
	// (the certificate subject mapped by PrincipalRules; "User:" may be
	// left out) a peer must have; empty accepts any node certificate of
	// the trust store (brokerd.raft.tls.peer.principals).
	PeerPrincipals []string
	// Prefix is the configuration keys' prefix that errors name
	// ("brokerd.raft.tls."); "" is "ssl.".
	Prefix string
}

// key is the configuration key name (keystore.location, ...) that errors
// name.
func (c Config) key(name string) string {
	if c.Prefix == "" {
		return "ssl." + name
	}
	return c.Prefix + name
}

// material is what a reload swaps: the certificate and the client CAs.
type material struct {
	cert *tls.Certificate
	cas  *x509.CertPool
}

// Server is the TLS side of the SSL listeners. Its certificates are read at
// New and again at each Reload; connections already open keep theirs.
type Server struct {
	cfg    Config
	auth   tls.ClientAuthType
	rules  *Rules
	logger *slog.Logger
	cur    atomic.Pointer[material]
}

// New reads the key store (and trust store) named by cfg.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{cfg: cfg, logger: logger}
	switch cfg.ClientAuth {
	case "", ClientAuthNone:
		s.auth = tls.NoClientCert
	case ClientAuthRequested:
		s.auth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		s.auth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("%s %q: want none, requested or required", cfg.key("client.auth"), cfg.ClientAuth)
	}
	if cfg.KeystoreLocation == "" {
		return nil, fmt.Errorf("TLS needs %s (a PEM file with the private key and the certificate chain)", cfg.key("keystore.location"))
	}
	if s.auth != tls.NoClientCert && cfg.TruststoreLocation == "" {
		return nil, fmt.Errorf("%s=%s needs %s (a PEM bundle of the CAs client certificates are signed by)", cfg.key("client.auth"), cfg.ClientAuth, cfg.key("truststore.location"))
	}
	rules, err := ParseRules(cfg.PrincipalRules)
	if err != nil {
		return nil, err
	}
	s.rules = rules
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	return s, nil
}

func (s *Server) load() (*material, error) {
	cert, err := loadKeystore(s.cfg.KeystoreLocation, s.cfg.key("keystore.location"))
	if err != nil {
		return nil, err
	}
	m := &material{cert: cert}
	if s.cfg.TruststoreLocation != "" {
		if m.cas, err = loadTruststore(s.cfg.TruststoreLocation, s.cfg.key("truststore.location")); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Reload reads the key store and trust store again. On an error the
// certificates in use stay, and the error is logged and returned.
func (s *Server) Reload() error {
	m, err := s.load()
	if err != nil {
		s.logger.Error("TLS reload failed; keeping the certificates in use", "err", err)
		return fmt.Errorf("tls reload: %w", err)
	}
	s.cur.Store(m)
	s.logger.Info("TLS certificates reloaded", "keystore", s.cfg.KeystoreLocation, "truststore", s.cfg.TruststoreLocation,
		"subject", m.cert.Leaf.Subject.String(), "not_after", m.cert.Leaf.NotAfter)
	return nil
}

// TLSConfig is the listener's configuration: each handshake takes the
// certificates current at that moment.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*m.cert},
				ClientAuth:   s.auth,
				ClientCAs:    m.cas,
			}, nil
		},
	}
}

// Principal is the Kafka principal of a TLS connection: User:ANONYMOUS
// without a client certificate, else User: and the certificate's subject
// mapped by ssl.principal.mapping.rules. An error fails the
// authentication: the connection is closed.
func (s *Server) Principal(st *tls.ConnectionState) (string, error) {
	if st == nil || len(st.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := SubjectDN(st.PeerCertificates[0])
	if err != nil {
		return "", err
	}
	name, err := s.rules.Apply(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}
