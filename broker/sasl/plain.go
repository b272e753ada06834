package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"sync"
)

// plainLookupOrder is which stored credential PLAIN checks a password
// against: the first mechanism the user has one for.
var plainLookupOrder = []string{ScramSHA512, ScramSHA256}

// An unknown user's password is derived against a mock credential with
// the parameters of a typical real one, so that it costs what a wrong
// password does: SCRAM-SHA-512 (what PLAIN checks first) at 4096
// iterations (what brokerd's bootstrap users and Kafka's minimum use),
// with a salt random per server. A user whose credential has other
// iterations still takes another time, as users of different iterations
// do from each other.
const (
	mockMechanism  = ScramSHA512
	mockIterations = 4096
)

// deriveFn is derive; tests watch it.
var deriveFn = derive

// plainExchange is RFC 4616: one token, authzid NUL authcid NUL passwd.
type plainExchange struct {
	lookup Lookup
	mock   Credential
	derive *deriveLimit
	user   string
	used   bool
}

func (p *plainExchange) User() string { return p.user }

func (p *plainExchange) Step(token []byte) ([]byte, bool, error) {
	if p.used {
		return nil, false, failed("PLAIN takes one token")
	}
	p.used = true
	if len(token) > MaxTokenBytes {
		return nil, false, failed("token of %d bytes", len(token))
	}
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, failed("PLAIN token has %d NUL-separated parts, want 3", len(parts))
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" || pass == "" {
		return nil, false, failed("PLAIN token without a user name or password")
	}
	if authz != "" && authz != user {
		return nil, false, failed("authorization id differs from the user name")
	}
	if err := verifyPassword(p.lookup, p.mock, p.derive, user, pass); err != nil {
		return nil, false, err
	}
	p.user = user
	return nil, true, nil
}

// VerifyPassword checks a password against the user's stored SCRAM
// credential (SCRAM-SHA-512 first), as PLAIN does, and as the admin API's
// HTTP Basic authentication does. An unknown user costs the same key
// derivation as a wrong password, and derivations share the process's
// limit with PLAIN's. The error wraps ErrAuthenticationFailed and never
// holds the password.
func VerifyPassword(lookup Lookup, user, pass string) error {
	c := processCheck()
	return verifyPassword(lookup, c.mock, c.derive, user, pass)
}

// passwordCheck is what checking a password needs besides the stored
// credentials: the mock credential of unknown users and the limit on key
// derivations. One per process: the CPUs are the process's.
type passwordCheck struct {
	mock   Credential
	derive *deriveLimit
}

var processCheck = sync.OnceValue(func() passwordCheck {
	salt := make([]byte, saltBytes)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	return passwordCheck{mock: Credential{Salt: salt, Iterations: mockIterations}, derive: newDeriveLimit()}
})

func verifyPassword(lookup Lookup, mock Credential, limit *deriveLimit, user, pass string) error {
	mech, cred, ok := mockMechanism, mock, false
	for _, m := range plainLookupOrder {
		if c, found := lookup(user, m); found {
			mech, cred, ok = m, c, true
			break
		}
	}
	if err := limit.acquire(); err != nil {
		return err
	}
	got, err := deriveFn(hashFor(mech), user, pass, cred.Salt, cred.Iterations)
	limit.release()
	if err != nil {
		return failed("derive: %v", err)
	}
	if !ok || !hmac.Equal(got.StoredKey, cred.StoredKey) {
		return failed("invalid credentials")
	}
	return nil
}
