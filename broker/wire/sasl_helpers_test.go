package wire

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/sasl"
)

// testSASL is a SASL server with PLAIN and SCRAM-SHA-256 enabled and one
// user, alice (password "secret"), under SCRAM-SHA-256.
func testSASL(t testing.TB) *sasl.Server {
	t.Helper()
	cred, err := sasl.NewCredential(sasl.ScramSHA256, "alice", "secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sasl.NewServer([]string{sasl.Plain, sasl.ScramSHA256}, func(u, m string) (sasl.Credential, bool) {
		return cred, u == "alice" && m == sasl.ScramSHA256
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// listenerAddr is the bound address of s's listener called name.
func listenerAddr(t testing.TB, s *Server, name string) net.Addr {
	t.Helper()
	a := s.ListenerAddr(name)
	if a == nil {
		t.Fatalf("no listener %s", name)
	}
	return a
}

// handshake sends a SaslHandshake for mech at version v on c and checks
// its answer is errCode.
func (c *rawConn) handshake(corr int32, mech string, v int16, errCode int16) {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech
	c.sendFrames(frameOf(corr, nil, versioned(hs, v)))
	_, resp := c.readResponse(apiKeySaslHandshake, v)
	if got := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; got != errCode {
		c.t.Fatalf("SaslHandshake %s v%d: error %v, want %v", mech, v, kerr.ErrorForCode(got), kerr.ErrorForCode(errCode))
	}
}

// authenticate sends a SaslAuthenticate v1 with token on c and returns
// its answer.
func (c *rawConn) authenticate(corr int32, token string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte(token)
	c.sendFrames(frameOf(corr, nil, versioned(au, 1)))
	_, resp := c.readResponse(apiKeySaslAuthenticate, 1)
	return resp.(*kmsg.SASLAuthenticateResponse)
}

// plainLogin authenticates c as alice with PLAIN.
func (c *rawConn) plainLogin(t testing.TB) {
	t.Helper()
	c.handshake(1, sasl.Plain, 1, 0)
	if r := c.authenticate(2, "\x00alice\x00secret"); r.ErrorCode != 0 {
		t.Fatalf("PLAIN login: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
