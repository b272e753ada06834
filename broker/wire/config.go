package wire

import (
	"log/slog"
	"time"
)

// Defaults applied by NewServer to zero (or negative) Config fields.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
	// Only Produce frames may come close to it.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxOtherBytes is the most the non-Produce frame cap may be
	// by default. The default cap is the largest frame whose worst-case
	// decode (decodeAmplification times the frame) fits the decode pool,
	// an eighth of MaxInFlightBytes: 256 KiB for the default 256 MiB
	// budget, which holds a Metadata request naming about 5,000 topics,
	// an OffsetCommit of about 10,000 partitions or a SyncGroup of a large
	// group; 1 MiB from a 1 GiB budget on.
	DefaultMaxOtherBytes = 1 << 20
	// DefaultMaxInFlightBytes is the memory budget for request frames held in
	// flight across all connections.
	DefaultMaxInFlightBytes = 256 << 20
	// DefaultMaxInFlightPerConn is how many requests one connection may
	// pipeline before the server stops reading from it. Clients use far
	// fewer (franz-go and librdkafka default to 5 per connection for
	// Produce), so this only stops floods.
	DefaultMaxInFlightPerConn = 64
	// DefaultMaxConnsPerIP is how many connections one client address (an
	// IPv4 address or an IPv6 /64) may hold open. Kafka's
	// max.connections.per.ip is unlimited by default; a bound keeps one
	// host from taking every file descriptor and goroutine, and is far above
	// what a client opens (one per broker, plus a few).
	DefaultMaxConnsPerIP = 1000
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms default.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultReadTimeout bounds the time from a frame's first byte to its
	// last one.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds each write of responses to a client.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultSASLMaxReceiveBytes is Kafka's sasl.server.max.receive.size:
	// the largest frame before SASL authentication.
	DefaultSASLMaxReceiveBytes = 524288
	// DefaultFailedAuthDelay is Kafka's
	// connection.failed.authentication.delay.ms default.
	DefaultFailedAuthDelay = 100 * time.Millisecond
	// DefaultAuthTimeout bounds how long a SASL connection may take to
	// authenticate. Kafka has no such bound (only connections.max.idle.ms);
	// brokerd closes a connection still unauthenticated after it, so that
	// idle unauthenticated connections hold nothing for long.
	DefaultAuthTimeout = 10 * time.Second
)

// minFrameSize is the smallest possible request: api key, api version and
// correlation id (header v0, no client id).
const minFrameSize = 8

// Config configures a Server. Zero values take the defaults above.
type Config struct {
	// Addr is the TCP address to listen on, e.g. "127.0.0.1:9092" or ":0",
	// when Listeners is empty: one plaintext listener named PLAINTEXT.
	Addr string
	// Listeners are the listeners to bind, each with its name; they share
	// the budgets and limits below.
	Listeners []Listener
	// MaxRequestBytes is socket.request.max.bytes: the cap for Produce
	// frames.
	MaxRequestBytes int32
	// MaxOtherBytes caps every non-Produce frame; zero means the largest
	// whose worst-case decode fits the decode pool (see
	// DefaultMaxOtherBytes). It is clamped to MaxRequestBytes.
	MaxOtherBytes int32
	// MaxInFlightBytes is the memory budget for request frames held in
	// flight across all connections, decoding included (see charge.go for
	// how it is split). One client address may hold 13/32 of it in frames,
	// so it must be at least 32/13 of MaxRequestBytes: Listen refuses a
	// configuration under which a legal frame could never be admitted.
	MaxInFlightBytes int64
	// MaxInFlightPerConn is how many requests a connection may have in
	// flight (read but not yet answered) before reading from it pauses.
	MaxInFlightPerConn int
	// MaxConnsPerIP is max.connections.per.ip: how many connections one
	// client address (IPv4 address, IPv6 /64) may have open; more are
	// closed as soon as they are accepted.
	MaxConnsPerIP int
	// IdleTimeout closes a connection that has had no request, no
	// response and nothing in flight for this long.
	IdleTimeout time.Duration
	// ReadTimeout drops a frame (and its connection) whose bytes take longer
	// than this from its first byte to its last. Time spent waiting for the
	// in-flight budget does not count.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write to the client; a client that does not
	// read its responses loses its connection.
	WriteTimeout time.Duration
	// SASLMaxReceiveBytes caps every frame a SASL listener reads before
	// the client has authenticated (sasl.server.max.receive.size).
	SASLMaxReceiveBytes int32
	// ReauthAfter is connections.max.reauth.ms (KIP-368): a SASL session
	// lasts this long, then the connection takes only re-authentication.
	// Zero: sessions do not expire.
	ReauthAfter time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: how
	// long a connection whose authentication failed waits for its answer
	// and its close. Zero: the default; negative: none.
	FailedAuthDelay time.Duration
	// AuthTimeout closes a SASL connection that has not authenticated
	// this long after it was accepted (TLS handshake included).
	AuthTimeout time.Duration
	// Throttling reports whether a request may be throttled (client quotas
	// exist). While it does, a connection reads its next request only once
	// the handler of the last one has returned and the mute it may have
	// set has passed, as Kafka reads one request per connection at a time:
	// pipelined frames wait in the socket, holding no budget. nil: never.
	Throttling func() bool
	// Logger receives the package's logs; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every unset field at its default.
func (c Config) withDefaults() Config {
	if len(c.Listeners) == 0 {
		c.Listeners = []Listener{{Name: DefaultListenerName, Addr: c.Addr}}
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxRequestBytes < minFrameSize {
		c.MaxRequestBytes = minFrameSize
	}
	if c.MaxInFlightBytes <= 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.MaxOtherBytes <= 0 {
		c.MaxOtherBytes = defaultMaxOtherBytes(c.MaxInFlightBytes)
	}
	if c.MaxOtherBytes > c.MaxRequestBytes {
		c.MaxOtherBytes = c.MaxRequestBytes
	}
	if c.MaxInFlightPerConn <= 0 {
		c.MaxInFlightPerConn = DefaultMaxInFlightPerConn
	}
	if c.MaxConnsPerIP <= 0 {
		c.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.SASLMaxReceiveBytes <= 0 {
		c.SASLMaxReceiveBytes = DefaultSASLMaxReceiveBytes
	}
	if c.FailedAuthDelay == 0 {
		c.FailedAuthDelay = DefaultFailedAuthDelay
	}
	if c.AuthTimeout <= 0 {
		c.AuthTimeout = DefaultAuthTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
