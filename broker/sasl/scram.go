package sasl

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// scramExchange runs a SCRAM conversation (client-first, client-final)
// on xdg-go/scram, adding the checks it leaves out.
type scramExchange struct {
	mechanism string
	keySize   int
	conv      *scram.ServerConversation
	step      int
	user      string
	// For librdkafka's client-final nonce (scram_legacy.go): the stored
	// credential, the gs2 header and bare client-first message, the
	// server-first message, and the server's part of its nonce.
	cred        Credential
	gs2, c1b    string
	s1, snonce  string
	legacyValid bool
}

func newScramExchange(mechanism string, lookup Lookup, nonce func() string) (*scramExchange, error) {
	h := hashFor(mechanism)
	if h == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
	}
	x := &scramExchange{mechanism: mechanism, keySize: h().Size()}
	srv, err := h.NewServer(func(name string) (scram.StoredCredentials, error) {
		user := decodeSaslName(name)
		c, ok := lookup(user, mechanism)
		if !ok {
			return scram.StoredCredentials{}, fmt.Errorf("no %s credential", mechanism)
		}
		x.user = user
		x.cred = c
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations}, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("scram server: %w", err)
	}
	x.conv = srv.WithNonceGenerator(func() string {
		x.snonce = nonce()
		return x.snonce
	}).NewConversation()
	return x, nil
}

// serverNonce is the server's nonce part: random, in hex. xdg-go's
// default is standard base64, whose '+' and '/' librdkafka does not take
// back (Kafka's own nonces are alphanumeric too).
func serverNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// User is the authenticated user once the exchange is done.
func (x *scramExchange) User() string {
	if !x.conv.Valid() && !x.legacyValid {
		return ""
	}
	return x.user
}

func (x *scramExchange) Step(token []byte) (reply []byte, done bool, err error) {
	defer func() {
		// The input is hostile and the library is not ours: a panic is
		// a failed authentication, never a crashed broker.
		if r := recover(); r != nil {
			reply, done, err = nil, false, failed("SCRAM step panicked: %v", r)
		}
	}()
	if len(token) > MaxTokenBytes {
		return nil, false, failed("token of %d bytes", len(token))
	}
	if bytes.IndexByte(token, 0) >= 0 {
		return nil, false, failed("NUL in SCRAM message")
	}
	x.step++
	msg := string(token)
	switch x.step {
	case 1:
		out, err := x.conv.Step(msg)
		if err != nil {
			return nil, false, failed("client-first: %v", err)
		}
		if a := x.conv.AuthzID(); a != "" && decodeSaslName(a) != x.user {
			return nil, false, failed("authorization id differs from the user name")
		}
		x.keepFirst(msg, out)
		return []byte(out), false, nil
	case 2:
		// xdg-go/scram xors the proof with a key-sized signature
		// without checking its length (a longer proof panics there).
		if err := checkProof(msg, x.keySize); err != nil {
			return nil, false, err
		}
		if x.isLegacyFinal(msg) {
			return x.legacyFinal(msg)
		}
		out, err := x.conv.Step(msg)
		if err != nil || !x.conv.Valid() {
			return nil, false, failed("client-final: %v", err)
		}
		return []byte(out), true, nil
	default:
		return nil, false, failed("SCRAM exchange already over")
	}
}

// checkProof checks the client-final message's proof (its last field,
// p=base64) decodes to size bytes.
func checkProof(msg string, size int) error {
	i := strings.LastIndexByte(msg, ',')
	if i < 0 || !strings.HasPrefix(msg[i+1:], "p=") {
		return failed("client-final without a proof")
	}
	p, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil || len(p) != size {
		return failed("client proof is not %d bytes of base64", size)
	}
	return nil
}

// decodeSaslName undoes RFC 5802's saslname escaping (=2C is a comma, =3D
// an equals sign).
func decodeSaslName(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
}
