package wire

import "errors"

// Errors returned by the decoders and recorded as the reason a connection was
// closed. They are wrapped with context; test them with errors.Is.
var (
	// ErrMalformedHeader means a request header is truncated or carries an
	// impossible length.
	ErrMalformedHeader = errors.New("wire: malformed request header")
	// ErrUnknownAPIKey means the api key is not a Kafka API known to kmsg.
	ErrUnknownAPIKey = errors.New("wire: unknown api key")
	// ErrUnsupportedVersion means the api version is outside the range that
	// is advertised (or that kmsg can decode).
	ErrUnsupportedVersion = errors.New("wire: unsupported api version")
	// ErrMalformedBody means the request body failed to decode.
	ErrMalformedBody = errors.New("wire: malformed request body")
	// ErrFrameSize means a frame's size prefix is below the minimum header
	// size or above the cap that applies to its api key.
	ErrFrameSize = errors.New("wire: frame size out of bounds")
	// ErrServerClosed is returned by Listen after Close or Shutdown.
	ErrServerClosed = errors.New("wire: server closed")
)

// Reasons a connection's reader stops, internal to the package.
var (
	// errStopped: Shutdown asked the connection to stop reading.
	errStopped = errors.New("wire: server shutting down")
	// errIdle: no request, no response and nothing in flight for
	// IdleTimeout.
	errIdle = errors.New("wire: connection idle")
	// errSlowFrame: a frame's bytes took longer than ReadTimeout.
	errSlowFrame = errors.New("wire: frame read timed out")
	// errNotAdmitted: a frame was not granted its share of the in-flight
	// budget before its read deadline.
	errNotAdmitted = errors.New("wire: frame not admitted before its deadline")
	// errTooManyConns: the client's address is at MaxConnsPerIP.
	errTooManyConns = errors.New("wire: too many connections from one address")
)
