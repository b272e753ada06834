package wire

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/sasl"
)

// TestAuthFailureLogBounded: a failed handshake's mechanism, the
// client's string, is logged cut short, and a burst of failures gives one
// Info line. It failed when a 16 KB mechanism name was logged whole (as
// escaped NULs, 4 log bytes a byte), once per connection.
func TestAuthFailureLogBounded(t *testing.T) {
	lb := &logBuffer{}
	cfg := Config{FailedAuthDelay: -1, Logger: slog.New(slog.NewTextHandler(lb, nil)),
		Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
	s := startServer(t, cfg, nil, answerAll)
	for range 5 {
		c := dialRaw(t, s.Addr())
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = string(make([]byte, 16000))
		c.sendFrames(frameOf(1, nil, versioned(hs, 1)))
		c.readResponse(apiKeySaslHandshake, 1)
		c.expectClosed()
	}
	waitFor(t, "a failure logged", func() bool { return strings.Contains(lb.String(), "SASL authentication failed") })
	out := lb.String()
	if n := strings.Count(out, "SASL authentication failed"); n != 1 {
		t.Errorf("%d Info lines for 5 failures", n)
	}
	if len(out) > 4096 {
		t.Errorf("%d bytes of log for 5 failed handshakes", len(out))
	}
}

// TestLoggerRace: the reader sets the principal on the connection's
// logger while a handler of an earlier request logs. Under -race it
// failed when the reader reassigned the logger field.
func TestLoggerRace(t *testing.T) {
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		time.Sleep(20 * time.Millisecond)
		return nil, errors.New("boom") // logged by the handler goroutine
	}
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logBuffer{}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Listeners: []Listener{{Name: "SASL", Addr: "127.0.0.1:0", SASL: testSASL(t)}}}
	s := startServer(t, cfg, nil, h)
	c := dialRaw(t, s.Addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = sasl.Plain
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("\x00alice\x00secret")
	c.sendFrames(frameOf(1, nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3)), frameOf(2, nil, versioned(hs, 1)), frameOf(3, nil, versioned(au, 1)))
	c.expectClosed()
}
