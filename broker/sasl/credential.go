package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"

	"github.com/xdg-go/scram"
)

// hashFor is a SCRAM mechanism's hash, nil for another mechanism.
func hashFor(mechanism string) scram.HashGeneratorFcn {
	switch mechanism {
	case ScramSHA256:
		return scram.SHA256
	case ScramSHA512:
		return scram.SHA512
	}
	return nil
}

// newHash is hashFor as the standard library's hash constructor.
func newHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// saltBytes is the salt length of credentials brokerd makes itself.
const saltBytes = 32

// NewCredential derives a credential for a password with a fresh random
// salt (bootstrap users). The password is not kept.
func NewCredential(mechanism, user, password string, iterations int) (Credential, error) {
	h := hashFor(mechanism)
	if h == nil {
		return Credential{}, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
	}
	salt := make([]byte, saltBytes)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, fmt.Errorf("salt: %w", err)
	}
	return derive(h, user, password, salt, iterations)
}

// derive computes a credential from a password, salt and iterations with
// xdg-go/scram (unprepped, as franz-go's kadm and scram client do).
func derive(h scram.HashGeneratorFcn, user, password string, salt []byte, iterations int) (Credential, error) {
	c, err := h.NewClientUnprepped(user, password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("scram client: %w", err)
	}
	sc := c.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	return Credential{Salt: salt, Iterations: iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// KeysFromSaltedPassword derives StoredKey and ServerKey from a salted
// password (AlterUserScramCredentials sends the salted password, computed
// client-side): RFC 5802's ClientKey = HMAC(SaltedPassword, "Client Key"),
// StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key").
func KeysFromSaltedPassword(mechanism string, salted []byte) (storedKey, serverKey []byte, err error) {
	nh := newHash(mechanism)
	if nh == nil {
		return nil, nil, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
	}
	if len(salted) != nh().Size() {
		return nil, nil, fmt.Errorf("salted password of %d bytes, want %d for %s", len(salted), nh().Size(), mechanism)
	}
	mac := hmac.New(nh, salted)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	h := nh()
	h.Write(clientKey)
	storedKey = h.Sum(nil)
	mac = hmac.New(nh, salted)
	mac.Write([]byte("Server Key"))
	return storedKey, mac.Sum(nil), nil
}
