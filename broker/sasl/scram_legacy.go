package sasl

import (
	"encoding/base64"
	"strings"
)

// librdkafka before 2.6.1 (kcat, confluent-kafka-python/-go, ... built on
// it) sends a client-final nonce of its own nonce followed by the whole
// server-first nonce, which already starts with its own nonce: r=C+C+S
// where RFC 5802 wants r=C+S (librdkafka #4895). Kafka never checked the
// nonce before 3.8.1 and since then accepts any nonce that ends with the
// server's (ScramSaslServer), so these clients work with Kafka.
//
// xdg-go/scram compares the nonce exactly, and no rewriting of the
// messages can help: the client's proof covers the AuthMessage, which
// holds the client-final message as sent, and xdg-go builds the
// AuthMessage from its own server-first message and the client-final it
// is given. So for this one form, and only with exactly C+C+S, brokerd
// checks the proof itself over the AuthMessage the client signed
// (verifyProof), with the credential, messages and server nonce of the
// xdg-go conversation that produced the server-first message.

// keepFirst records, after xdg-go accepted the client-first message c1
// and answered s1, what the legacy client-final check needs.
func (x *scramExchange) keepFirst(c1, s1 string) {
	// xdg-go parsed c1: it is gs2-header ("n,," or "n,a=authzid,")
	// followed by client-first-message-bare.
	i := strings.IndexByte(c1, ',')
	j := i + 1 + strings.IndexByte(c1[i+1:], ',')
	x.gs2, x.c1b, x.s1 = c1[:j+1], c1[j+1:], s1
}

// isLegacyFinal reports whether the client-final message carries
// librdkafka's doubled client nonce.
func (x *scramExchange) isLegacyFinal(c2 string) bool {
	nonce, _, ok := strings.Cut(strings.TrimPrefix(x.s1, "r="), ",")
	if !ok || x.snonce == "" || !strings.HasSuffix(nonce, x.snonce) || !strings.HasPrefix(x.s1, "r=") {
		return false
	}
	client := strings.TrimSuffix(nonce, x.snonce)
	attrs := strings.SplitN(c2, ",", 3)
	return len(attrs) == 3 && client != "" && attrs[1] == "r="+client+nonce
}

// legacyFinal checks a client-final message with the doubled nonce: the
// channel binding must repeat the gs2 header (as xdg-go checks), and the
// proof must verify over the AuthMessage the client computed.
func (x *scramExchange) legacyFinal(c2 string) (reply []byte, done bool, err error) {
	cbind, _, _ := strings.Cut(c2, ",")
	gs2, derr := base64.StdEncoding.DecodeString(strings.TrimPrefix(cbind, "c="))
	if !strings.HasPrefix(cbind, "c=") || derr != nil || string(gs2) != x.gs2 {
		return nil, false, failed("client-final: channel binding does not match")
	}
	i := strings.LastIndex(c2, ",p=")
	proof, derr := base64.StdEncoding.DecodeString(c2[i+3:]) // checkProof passed
	if derr != nil {
		return nil, false, failed("client-final: proof is not base64")
	}
	authMsg := x.c1b + "," + x.s1 + "," + c2[:i]
	sig, ok := verifyProof(newHash(x.mechanism), x.cred.StoredKey, x.cred.ServerKey, authMsg, proof)
	if !ok {
		return nil, false, failed("client-final (librdkafka nonce): invalid proof")
	}
	x.legacyValid = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(sig)), true, nil
}
