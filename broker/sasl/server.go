package sasl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mechanism names, as Kafka's sasl.enabled.mechanisms spells them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// DefaultMechanisms is brokerd's sasl.enabled.mechanisms default. PLAIN is
// left out: it sends the password itself, and checking it costs the
// server a key derivation per attempt.
var DefaultMechanisms = []string{ScramSHA256, ScramSHA512}

// known lists the mechanisms this package implements.
var known = []string{Plain, ScramSHA256, ScramSHA512}

// MaxTokenBytes bounds a client token; Kafka's sasl.server.max.receive.size
// (524288) bounds the whole frame, which the wire layer enforces first.
const MaxTokenBytes = 512 << 10

// ErrAuthenticationFailed is every failed exchange: a wrong password, an
// unknown user, a malformed token. Its text never says which.
var ErrAuthenticationFailed = errors.New("authentication failed")

// ErrUnsupportedMechanism: the mechanism is not enabled.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// Credential is a stored SCRAM credential.
type Credential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// Lookup returns a user's credential for a SCRAM mechanism.
type Lookup func(user, mechanism string) (Credential, bool)

// Server authenticates clients with the enabled mechanisms.
type Server struct {
	mechanisms []string
	lookup     Lookup
	// mock is PLAIN's credential for unknown users (plain.go); derive
	// bounds the key derivations running at once (derive.go).
	mock   Credential
	derive *deriveLimit
	// nonce makes SCRAM server nonces (serverNonce; fixed in tests).
	nonce func() string
}

// NewServer returns a server for the mechanisms (nil: DefaultMechanisms).
// An unknown mechanism (GSSAPI, OAUTHBEARER, ...) is an error.
func NewServer(mechanisms []string, lookup Lookup) (*Server, error) {
	if len(mechanisms) == 0 {
		mechanisms = DefaultMechanisms
	}
	if lookup == nil {
		return nil, errors.New("sasl: no credential lookup")
	}
	var out []string
	for _, m := range mechanisms {
		m = strings.TrimSpace(m)
		if !slices.Contains(known, m) {
			return nil, fmt.Errorf("sasl: mechanism %q is not supported (brokerd has %s)", m, strings.Join(known, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	c := processCheck()
	return &Server{mechanisms: out, lookup: lookup, mock: c.mock, derive: c.derive, nonce: serverNonce}, nil
}

// ParseMechanisms splits a sasl.enabled.mechanisms value and checks each.
func ParseMechanisms(v string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(v, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(known, m) {
			return nil, fmt.Errorf("mechanism %q is not supported (brokerd has %s)", m, strings.Join(known, ", "))
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no mechanism given")
	}
	return out, nil
}

// Mechanisms are the enabled mechanisms, in configured order.
func (s *Server) Mechanisms() []string { return slices.Clone(s.mechanisms) }

// Exchange is one authentication attempt.
type Exchange interface {
	// Step takes the client's next token and returns the server's reply
	// and whether the exchange succeeded with it. Any error is a failed
	// authentication (wrapping ErrAuthenticationFailed); the exchange is
	// then over.
	Step(token []byte) (reply []byte, done bool, err error)
	// User is the authenticated user name, once done.
	User() string
}

// Start begins an exchange with an enabled mechanism.
func (s *Server) Start(mechanism string) (Exchange, error) {
	if !slices.Contains(s.mechanisms, mechanism) {
		return nil, fmt.Errorf("%w: %q (enabled: %s)", ErrUnsupportedMechanism, mechanism, strings.Join(s.mechanisms, ","))
	}
	switch mechanism {
	case Plain:
		return &plainExchange{lookup: s.lookup, mock: s.mock, derive: s.derive}, nil
	default:
		return newScramExchange(mechanism, s.lookup, s.nonce)
	}
}

// failed wraps a reason as an authentication failure. The reason is for
// the broker's debug log only.
func failed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrAuthenticationFailed, fmt.Sprintf(format, args...))
}
