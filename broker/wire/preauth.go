package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Before a SASL client has authenticated, nothing it sends holds shared
// budget: each frame (or raw v0 token) is read whole into the
// connection's own read buffer, within the frame's read deadline, and only
// then copied out and handled, outside the frame and decode pools. So
// unauthenticated clients cannot pin the pools other clients need, and
// what one costs is its read buffer and one frame at a time.
//
// brokerd's mechanisms need little: a SCRAM client-first message is a
// user name (at most raftstore.MaxScramUserBytes, three times that
// escaped) and a nonce, the client-final one a nonce and a proof, a PLAIN
// token a user name and a password, an ApiVersions request two short
// strings. So pre-authentication frames are capped at maxPreAuthFrameBytes,
// the read buffer's size, below sasl.server.max.receive.size's default
// (Kafka's 512 KiB, which Kafka too reads outside its memory pool); a
// lower sasl.server.max.receive.size lowers the cap.
const maxPreAuthFrameBytes = readBufferSize

// maxPreAuthApiVersions bounds the ApiVersions requests before the
// handshake. Kafka answers one, then wants the handshake (a second one
// closes the connection), after any number of UNSUPPORTED_VERSION
// answers; brokerd takes one answered request, and a few UNSUPPORTED_VERSION
// ones before it.
const maxPreAuthApiVersions = 4

// errAuthTimeout: the client did not authenticate within AuthTimeout.
var errAuthTimeout = errors.New("wire: SASL authentication not completed in time")

// preAuthLimit is the largest frame or raw token taken before
// authentication.
func (c *conn) preAuthLimit() int32 {
	return min(c.srv.cfg.SASLMaxReceiveBytes, maxPreAuthFrameBytes)
}

// readPreAuth reads one frame (or raw token) of a client that has not
// authenticated yet, whole, before anything is allocated for it, and
// handles it without charging the pools.
func (c *conn) readPreAuth() error {
	what := "frame"
	if c.auth.raw {
		what = "SASL token"
	}
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return c.frameReadError(0, err)
	}
	size := int32(binary.BigEndian.Uint32(b[:]))
	if limit := c.preAuthLimit(); size < 0 || size > limit {
		return fmt.Errorf("%s of %d bytes before SASL authentication, above the %d-byte limit (sasl.server.max.receive.size, at most %d): %w",
			what, size, limit, maxPreAuthFrameBytes, ErrFrameSize)
	}
	if !c.auth.raw && size < minFrameSize {
		return fmt.Errorf("frame size %d below the %d-byte minimum: %w", size, minFrameSize, ErrFrameSize)
	}
	if !c.auth.raw {
		kb, err := c.br.Peek(2)
		if err != nil {
			return c.frameReadError(size, err)
		}
		if key := int16(binary.BigEndian.Uint16(kb)); !allowedPreAuth(key) {
			return fmt.Errorf("api key %d: %w", key, errPreAuth)
		}
	}
	body, err := c.br.Peek(int(size)) // size <= the buffer's size
	if err != nil {
		return c.frameReadError(size, err)
	}
	frame := bytes.Clone(body)
	if _, err := c.br.Discard(int(size)); err != nil {
		return fmt.Errorf("discard a buffered frame: %w", err)
	}
	c.touch()
	if c.auth.raw {
		return c.rawToken(frame)
	}
	return c.dispatch(frame, ticket{})
}

// authDeadlineFor bounds a deadline by the authentication deadline while
// the connection has not authenticated.
func (c *conn) authDeadlineFor(d time.Time) time.Time {
	if c.auth.preAuth() && c.auth.deadline.Before(d) {
		return c.auth.deadline
	}
	return d
}

// checkAuthDeadline fails a connection still unauthenticated at its
// authentication deadline.
func (c *conn) checkAuthDeadline(now time.Time) error {
	if c.auth.preAuth() && !now.Before(c.auth.deadline) {
		return fmt.Errorf("not authenticated within %s: %w", c.srv.cfg.AuthTimeout, errAuthTimeout)
	}
	return nil
}

// preAuthApiVersions applies Kafka's rules to an ApiVersions request
// before authentication: after the handshake it is refused with
// ILLEGAL_SASL_STATE and the connection closed (SaslServerAuthenticator
// wants SaslAuthenticate then); before it, one is answered, and a second
// one, or more than maxPreAuthApiVersions in all, closes the connection.
// supported is whether the request's version is served (an
// UNSUPPORTED_VERSION answer lets the client retry lower).
func (c *conn) preAuthApiVersions(hdr RequestHeader, supported bool) error {
	a := &c.auth
	if a.ex != nil {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if !supported {
			resp.SetVersion(0)
		} else {
			resp.SetVersion(hdr.APIVersion)
		}
		a.failFrame = AppendResponse(nil, hdr.CorrelationID, hdr.APIKey, resp)
		return fmt.Errorf("%w: ApiVersions during SASL authentication, after SaslHandshake", errAuthFailed)
	}
	a.apiVersions++
	switch {
	case a.versionsAnswered:
		return fmt.Errorf("a second ApiVersions before SaslHandshake: %w", errPreAuth)
	case a.apiVersions > maxPreAuthApiVersions:
		return fmt.Errorf("%d ApiVersions requests before SaslHandshake: %w", a.apiVersions, errPreAuth)
	}
	a.versionsAnswered = supported
	return nil
}
