package sasl

import (
	"bytes"
	"crypto/hmac"
)

// plainLookupOrder is which stored credential PLAIN checks a password
// against: the first mechanism the user has one for.
var plainLookupOrder = []string{ScramSHA512, ScramSHA256}

// dummyCredential is what PLAIN derives against for an unknown user, so
// that an unknown user costs the same time as a wrong password.
var dummyCredential = Credential{Salt: []byte("brokerd-unknown-user"), Iterations: 4096}

// plainExchange is RFC 4616: one token, authzid NUL authcid NUL passwd.
type plainExchange struct {
	lookup Lookup
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
	if err := VerifyPassword(p.lookup, user, pass); err != nil {
		return nil, false, err
	}
	p.user = user
	return nil, true, nil
}

// VerifyPassword checks a password against the user's stored SCRAM
// credential (SCRAM-SHA-512 first), as PLAIN does, and as the admin API's
// HTTP Basic authentication does. An unknown user costs the same key
// derivation as a wrong password. The error wraps ErrAuthenticationFailed
// and never holds the password.
func VerifyPassword(lookup Lookup, user, pass string) error {
	mech, cred, ok := "", dummyCredential, false
	for _, m := range plainLookupOrder {
		if c, found := lookup(user, m); found {
			mech, cred, ok = m, c, true
			break
		}
	}
	if !ok {
		mech = ScramSHA256
	}
	got, err := derive(hashFor(mech), user, pass, cred.Salt, cred.Iterations)
	if err != nil {
		return failed("derive: %v", err)
	}
	if !ok || !hmac.Equal(got.StoredKey, cred.StoredKey) {
		return failed("invalid credentials")
	}
	return nil
}
