package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ioTimeout bounds every wait in the tests so that a bug fails fast instead
// of hanging.
const ioTimeout = 5 * time.Second

// frameOf encodes req with correlation id corr and client id clientID as a
// client does (kmsg's formatter) and returns the frame without its size
// prefix.
func frameOf(corr int32, clientID *string, req kmsg.Request) []byte {
	f := kmsg.NewRequestFormatter()
	if clientID != nil {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
	}
	return f.AppendRequest(nil, req, corr)[4:]
}

// sized prefixes a frame with its int32 size.
func sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// versioned returns req with its version set.
func versioned(req kmsg.Request, v int16) kmsg.Request {
	req.SetVersion(v)
	return req
}

// allVersions advertises every key kmsg knows at every version it knows.
func allVersions(key int16) (int16, int16, bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	return 0, r.MaxVersion(), true
}

// emptyResponse answers any request with the empty response of its kind.
func emptyResponse(_ context.Context, req *Request) (kmsg.Response, error) {
	return req.Msg.ResponseKind(), nil
}

// logBuffer collects log output for tests that check it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger discards logs unless WIRE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("WIRE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startServer listens on loopback and serves until the test ends.
func startServer(t testing.TB, cfg Config, versions Versions, h Handler) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if versions == nil {
		versions = allVersions
	}
	s := NewServer(cfg, versions, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(ioTimeout):
			t.Error("Serve did not return after Close")
		}
	})
	return s
}

// rawConn is a bare client connection for driving the server byte by byte.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr net.Addr) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes the given bytes in one write.
func (c *rawConn) send(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// sendFrames writes each frame with its size prefix, all in one write.
func (c *rawConn) sendFrames(frames ...[]byte) {
	c.t.Helper()
	var b []byte
	for _, f := range frames {
		b = append(b, sized(f)...)
	}
	c.send(b)
}

// readFrame reads one response frame (without its size prefix).
func (c *rawConn) readFrame() ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var sz [4]byte
	if _, err := io.ReadFull(c.br, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 64<<20 {
		return nil, errors.New("response frame too large")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.br, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readResponse reads one response to a request of key at version and
// decodes it.
func (c *rawConn) readResponse(key, version int16) (int32, kmsg.Response) {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	corr, resp, err := decodeResponse(b, key, version)
	if err != nil {
		c.t.Fatalf("decode response: %v", err)
	}
	return corr, resp
}

// decodeResponse decodes a response frame as a client does.
func decodeResponse(b []byte, key, version int16) (int32, kmsg.Response, error) {
	if len(b) < 4 {
		return 0, nil, errors.New("short response")
	}
	corr := int32(binary.BigEndian.Uint32(b))
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	body := b[4:]
	if resp.IsFlexible() && key != apiKeyApiVersions {
		if len(body) == 0 || body[0] != 0 {
			return corr, nil, errors.New("missing empty response header tags")
		}
		body = body[1:]
	}
	return corr, resp, resp.ReadFrom(body)
}

// expectClosed asserts that the server closes the connection without
// sending anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	b, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection still open after %s", ioTimeout)
	}
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func strPtr(s string) *string { return &s }

// requestForKey is kmsg.RequestForKey, named for the tests.
func requestForKey(key int16) kmsg.Request { return kmsg.RequestForKey(key) }

// measureAlloc returns the bytes allocated while running f. It reads the
// exact statistics (a stop-the-world), so keep it out of hot loops.
func measureAlloc(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}
