package sasl

import (
	"crypto/hmac"
	"crypto/subtle"
	"hash"
)

// verifyProof is RFC 5802's server check of a client proof, with the
// standard library's HMAC and hashes: ClientSignature = HMAC(StoredKey,
// AuthMessage), ClientKey = proof XOR ClientSignature, and H(ClientKey)
// must equal StoredKey (compared in constant time). It returns the
// ServerSignature, HMAC(ServerKey, AuthMessage), for the server-final
// message. Only the librdkafka nonce form uses it (scram_legacy.go); every
// other exchange is checked by xdg-go/scram, and the tests hold the two
// to the same answers.
func verifyProof(newHash func() hash.Hash, storedKey, serverKey []byte, authMsg string, proof []byte) ([]byte, bool) {
	if newHash == nil {
		return nil, false
	}
	mac := hmac.New(newHash, storedKey)
	mac.Write([]byte(authMsg))
	clientSig := mac.Sum(nil)
	if len(proof) != len(clientSig) || len(storedKey) != len(clientSig) {
		return nil, false
	}
	clientKey := make([]byte, len(clientSig))
	subtle.XORBytes(clientKey, proof, clientSig)
	h := newHash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), storedKey) {
		return nil, false
	}
	mac = hmac.New(newHash, serverKey)
	mac.Write([]byte(authMsg))
	return mac.Sum(nil), true
}
