package wire

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/sasl"
)

// TestPreAuthHoldsNoBudget: unauthenticated clients that send size
// prefixes (raw v0 tokens and framed requests) hold nothing of the
// frame pool, so a PLAINTEXT client's 1 MiB Produce is answered at once;
// a prefix above the pre-authentication cap closes the connection. It
// failed when raw tokens were charged on their prefix alone, up to
// 512 KiB each: 28 connections from two addresses held the whole pool.
func TestPreAuthHoldsNoBudget(t *testing.T) {
	cfg := Config{MaxInFlightBytes: 16 << 20, MaxRequestBytes: 4 << 20, ReadTimeout: 20 * time.Second,
		Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}, {Name: "PLAIN", Addr: "127.0.0.1:0"}}}
	s := startServer(t, cfg, nil, answerAll)
	saslAddr := listenerAddr(t, s, "SASL")
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		for i := range 14 {
			c := dialFrom(t, saslAddr, ip)
			if i%2 == 0 {
				c.handshake(1, sasl.Plain, 0, 0)
				c.send(binary.BigEndian.AppendUint32(nil, 16<<10)) // a raw token's prefix only
			} else {
				c.declare(16<<10, apiKeySaslAuthenticate, 1, 10)
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.InFlightBytes(); n != 0 {
		t.Fatalf("unauthenticated connections hold %d bytes of the frame pool", n)
	}
	c := dialFrom(t, listenerAddr(t, s, "PLAIN"), "127.0.0.4")
	start := time.Now()
	c.sendFrames(produceFrame(1, 9, 1, 1<<20))
	c.readResponse(apiKeyProduce, 9)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a 1 MiB Produce waited %v", d)
	}

	for _, raw := range []bool{true, false} {
		c := dialRaw(t, saslAddr)
		if raw {
			c.handshake(1, sasl.Plain, 0, 0)
			c.send(binary.BigEndian.AppendUint32(nil, 16<<10+1))
		} else {
			c.declare(16<<10+1, apiKeySaslAuthenticate, 1, 10)
		}
		c.expectClosed()
	}
}

// TestPreAuthFramesStillWork: raw v0 tokens and framed exchanges read by
// the pre-authentication path authenticate, and a token split across
// writes is read whole.
func TestPreAuthFramesStillWork(t *testing.T) {
	cfg := Config{Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
	s := startServer(t, cfg, nil, answerAll)

	c := dialRaw(t, s.Addr())
	c.handshake(1, sasl.Plain, 0, 0)
	tok := []byte("\x00alice\x00secret")
	b := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	c.send(append(b, tok[:3]...))
	time.Sleep(20 * time.Millisecond)
	c.send(tok[3:])
	if reply, err := c.readFrame(); err != nil || len(reply) != 0 {
		t.Fatalf("raw PLAIN token: %q %v", reply, err)
	}
	c.sendFrames(frameOf(3, nil, versioned(kmsg.NewPtrMetadataRequest(), 4)))
	c.readResponse(3, 4)

	c = dialRaw(t, s.Addr())
	c.plainLogin(t)
	c.sendFrames(frameOf(3, nil, versioned(kmsg.NewPtrMetadataRequest(), 4)))
	c.readResponse(3, 4)
}

// TestAuthTimeout: a SASL connection that does not authenticate within
// AuthTimeout is closed, idle or in the middle of a frame, while an
// authenticated one stays.
func TestAuthTimeout(t *testing.T) {
	cfg := Config{AuthTimeout: 300 * time.Millisecond, ReadTimeout: time.Minute,
		Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
	s := startServer(t, cfg, nil, answerAll)
	idle, partial, ok := dialRaw(t, s.Addr()), dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	partial.declare(100, apiKeySaslHandshake, 1, 4)
	ok.plainLogin(t)
	start := time.Now()
	idle.expectClosed()
	partial.expectClosed()
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("closed after %v", d)
	}
	ok.sendFrames(frameOf(3, nil, versioned(kmsg.NewPtrMetadataRequest(), 4)))
	ok.readResponse(3, 4)
}

// TestPreAuthApiVersions follows Kafka's SaslServerAuthenticator: one
// ApiVersions before the handshake is answered and a second closes the
// connection; one between the handshake and SaslAuthenticate is answered
// ILLEGAL_SASL_STATE and the connection closed.
func TestPreAuthApiVersions(t *testing.T) {
	cfg := Config{FailedAuthDelay: -1, Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
	s := startServer(t, cfg, nil, answerAll)

	c := dialRaw(t, s.Addr())
	c.sendFrames(frameOf(1, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	c.readResponse(apiKeyApiVersions, 3)
	c.sendFrames(frameOf(2, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	c.expectClosed()

	// UNSUPPORTED_VERSION answers let the client retry, a few times.
	c = dialRaw(t, s.Addr())
	for i := range maxPreAuthApiVersions {
		c.sendFrames(frameOf(int32(i), nil, versioned(kmsg.NewPtrApiVersionsRequest(), 99)))
		c.readResponse(apiKeyApiVersions, 0)
	}
	c.sendFrames(frameOf(9, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 99)))
	c.expectClosed()

	c = dialRaw(t, s.Addr())
	c.sendFrames(frameOf(1, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	c.readResponse(apiKeyApiVersions, 3)
	c.handshake(2, sasl.Plain, 1, 0)
	c.sendFrames(frameOf(3, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	_, resp := c.readResponse(apiKeyApiVersions, 3)
	if got := resp.(*kmsg.ApiVersionsResponse).ErrorCode; got != kerr.IllegalSaslState.Code {
		t.Fatalf("ApiVersions after the handshake: %v", kerr.ErrorForCode(got))
	}
	c.expectClosed()
}

// TestSaslAfterAuthentication follows KafkaApis and KafkaChannel: on an
// authenticated connection a SaslAuthenticate without a handshake, and a
// handshake when sessions do not expire or within a second of the last
// re-authentication, are answered ILLEGAL_SASL_STATE and the connection
// goes on.
func TestSaslAfterAuthentication(t *testing.T) {
	for _, reauth := range []time.Duration{0, time.Hour} {
		cfg := Config{ReauthAfter: reauth, Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
		s := startServer(t, cfg, nil, answerAll)
		c := dialRaw(t, s.Addr())
		c.plainLogin(t)
		if r := c.authenticate(3, "\x00alice\x00secret"); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("reauth %v: SaslAuthenticate without a handshake: %v", reauth, kerr.ErrorForCode(r.ErrorCode))
		}
		if reauth > 0 {
			c.handshake(4, sasl.Plain, 1, 0) // the first re-authentication
			if r := c.authenticate(5, "\x00alice\x00secret"); r.ErrorCode != 0 {
				t.Fatalf("re-authentication: %v", kerr.ErrorForCode(r.ErrorCode))
			}
		}
		c.handshake(6, sasl.Plain, 1, kerr.IllegalSaslState.Code)
		c.sendFrames(frameOf(7, nil, versioned(kmsg.NewPtrMetadataRequest(), 4)))
		c.readResponse(3, 4)
	}
}
