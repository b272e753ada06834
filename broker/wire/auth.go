package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/sasl"
)

// SASL on a connection (KIP-43, KIP-152, KIP-368). The reader runs the
// exchange itself, in read order: SaslHandshake and SaslAuthenticate are
// answered inline, so the next frame is read knowing whether the client
// has authenticated, and whether it sends raw tokens (handshake v0).
// Before authentication a SASL listener answers only ApiVersions (one,
// before the handshake), SaslHandshake and SaslAuthenticate, in frames
// read whole into the connection's read buffer and charged to no pool
// (preauth.go), until AuthTimeout; anything else closes the connection,
// as in Kafka. A failed
// authentication is answered, after FailedAuthDelay, and the connection
// closed (delayedCloser).

const (
	apiKeySaslHandshake    int16 = 17
	apiKeySaslAuthenticate int16 = 36
)

// errAuthFailed stops the reader of a connection whose authentication
// failed: it is closed after the delay, with authState.failFrame.
var errAuthFailed = errors.New("wire: SASL authentication failed")

// errPreAuth: a request other than ApiVersions, SaslHandshake and
// SaslAuthenticate before authentication, or after the session expired.
var errPreAuth = errors.New("wire: request before SASL authentication")

// authState is a connection's SASL state; the reader alone uses it.
type authState struct {
	srv *sasl.Server // nil: not a SASL listener
	// mech is the mechanism of the last handshake; ex the exchange it
	// started, until it succeeds or fails.
	mech string
	ex   sasl.Exchange
	// raw: the handshake was v0, so the exchange's tokens come as bare
	// size-prefixed frames (KIP-43).
	raw           bool
	authenticated bool
	user          string
	// expires is when the session ends (KIP-368); zero: never.
	expires time.Time
	// failFrame is the response sent when the connection is closed after
	// a failed authentication (nil: none).
	failFrame []byte
	// deadline is when a connection that has not authenticated is
	// closed (AuthTimeout).
	deadline time.Time
	// apiVersions counts the ApiVersions requests before authentication;
	// versionsAnswered is set once one was answered (preauth.go).
	apiVersions      int
	versionsAnswered bool
	// reauthStart is when the last re-authentication began: Kafka takes
	// at most one a second (KafkaChannel).
	reauthStart time.Time
}

// preAuth reports whether the connection must still authenticate.
func (a *authState) preAuth() bool { return a.srv != nil && !a.authenticated }

// expired reports whether an authenticated session has run out.
func (a *authState) expired(now time.Time) bool {
	return a.authenticated && !a.expires.IsZero() && now.After(a.expires)
}

// saslAPI reports whether key is one of the SASL requests.
func saslAPI(key int16) bool { return key == apiKeySaslHandshake || key == apiKeySaslAuthenticate }

// allowedPreAuth reports whether key may come before authentication.
func allowedPreAuth(key int16) bool { return key == apiKeyApiVersions || saslAPI(key) }

// failedAuthMessage is Kafka's text for a failed SaslAuthenticate.
func failedAuthMessage(mech string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

// dispatchSASL answers a SaslHandshake or SaslAuthenticate frame inline.
// The frame's bodies are flat (a string, a bytes field), so decoding one
// allocates about its size, within the small pre-authentication cap;
// they are not charged to the decode pool.
func (c *conn) dispatchSASL(frame []byte, hdr RequestHeader, msg kmsg.Request) error {
	hdr, body, err := parseHeaderRest(frame, hdr, msg)
	if err != nil {
		return fmt.Errorf("api key %d version %d: %w", hdr.APIKey, hdr.APIVersion, err)
	}
	if err := decodeBody(msg, body); err != nil {
		return fmt.Errorf("api key %d version %d client %s: %w", hdr.APIKey, hdr.APIVersion, clientIDString(hdr.ClientID), err)
	}
	var resp kmsg.Response
	var fail error
	switch r := msg.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp, fail = c.saslHandshake(hdr, r)
	case *kmsg.SASLAuthenticateRequest:
		resp, fail = c.saslAuthenticate(hdr, r)
	default:
		return fmt.Errorf("api key %d is not a SASL request", hdr.APIKey)
	}
	resp.SetVersion(hdr.APIVersion)
	if fail != nil {
		c.logAuthFailure(fail)
		c.auth.failFrame = AppendResponse(nil, hdr.CorrelationID, hdr.APIKey, resp)
		return fmt.Errorf("%w: %w", errAuthFailed, fail)
	}
	c.queue <- newAnsweredSlot(hdr, resp) // never blocks: the reader holds a token
	return nil
}

// saslHandshake picks the mechanism. A non-nil error fails the
// connection after the response.
func (c *conn) saslHandshake(hdr RequestHeader, r *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	a := &c.auth
	if a.srv == nil {
		// Kafka answers a handshake on a PLAINTEXT or SSL listener so,
		// and goes on serving the connection.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	if a.authenticated && a.ex == nil && !c.reauthAllowed(time.Now()) {
		// Kafka (KafkaChannel.maybeBeginServerReauthentication) passes
		// such a handshake to KafkaApis, which answers it so and keeps
		// the connection.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = a.srv.Mechanisms()
	switch {
	case a.ex != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, errors.New("a second SaslHandshake before SaslAuthenticate")
	case a.authenticated && hdr.APIVersion == 0:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, errors.New("re-authentication needs SaslHandshake v1")
	case a.authenticated && r.Mechanism != a.mech:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, fmt.Errorf("re-authentication with %s after %s", r.Mechanism, a.mech)
	}
	ex, err := a.srv.Start(r.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		a.mech = r.Mechanism
		return resp, err
	}
	a.mech, a.ex, a.raw = r.Mechanism, ex, hdr.APIVersion == 0
	if a.authenticated {
		a.reauthStart = time.Now()
	}
	return resp, nil
}

// minReauthInterval is Kafka's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS: a
// connection re-authenticates at most once a second.
const minReauthInterval = time.Second

// reauthAllowed reports whether an authenticated connection may start a
// re-authentication now: only with sessions that expire
// (connections.max.reauth.ms), and at most once per minReauthInterval,
// as in Kafka.
func (c *conn) reauthAllowed(now time.Time) bool {
	if c.srv.cfg.ReauthAfter <= 0 {
		return false
	}
	return c.auth.reauthStart.IsZero() || now.Sub(c.auth.reauthStart) >= minReauthInterval
}

// saslAuthenticate feeds the exchange one token.
func (c *conn) saslAuthenticate(hdr RequestHeader, r *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	a := &c.auth
	if a.srv == nil || a.ex == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake first"
		if a.authenticated {
			// KafkaApis answers so, and keeps the connection.
			msg = "SaslAuthenticate request received after successful authentication"
		}
		resp.ErrorMessage = &msg
		if a.srv == nil || a.authenticated {
			return resp, nil
		}
		return resp, errors.New(msg)
	}
	reply, done, err := a.ex.Step(r.SASLAuthBytes)
	if err != nil {
		a.ex = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := failedAuthMessage(a.mech)
		resp.ErrorMessage = &msg
		return resp, err
	}
	resp.SASLAuthBytes = reply
	if !done {
		return resp, nil
	}
	if err := c.authenticated(a.ex.User()); err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		resp.SASLAuthBytes = nil
		return resp, err
	}
	if d := c.srv.cfg.ReauthAfter; d > 0 && hdr.APIVersion >= 1 {
		resp.SessionLifetimeMillis = d.Milliseconds()
	}
	return resp, nil
}

// authenticated ends a successful exchange: the connection's principal is
// now User:<name>, and with ReauthAfter its session ends then.
func (c *conn) authenticated(user string) error {
	a := &c.auth
	a.ex, a.raw = nil, false
	p := "User:" + user
	if a.authenticated && p != c.principal {
		return errors.New("cannot change principals during re-authentication")
	}
	if !a.authenticated {
		// Handlers and the writer read the logger concurrently: it is
		// swapped, never changed in place.
		c.setLogger(c.logger().With("principal", p))
		c.logger().Debug("wire: SASL authenticated", "mechanism", a.mech)
	}
	a.authenticated, a.user, c.principal = true, user, p
	if d := c.srv.cfg.ReauthAfter; d > 0 {
		a.expires = time.Now().Add(d)
	}
	return nil
}

// rawToken answers one bare SASL token (after a v0 handshake), read by
// readPreAuth, with a bare token; a failure closes the connection without
// an answer, as Kafka does.
func (c *conn) rawToken(token []byte) error {
	reply, done, err := c.auth.ex.Step(token)
	if err != nil {
		c.auth.ex = nil
		c.logAuthFailure(err)
		return fmt.Errorf("%w: %w", errAuthFailed, err)
	}
	if done {
		if err := c.authenticated(c.auth.ex.User()); err != nil {
			return fmt.Errorf("%w: %w", errAuthFailed, err)
		}
	}
	c.queue <- newRawSlot(reply)
	return nil
}
