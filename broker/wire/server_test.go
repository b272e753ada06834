package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeat returns a Heartbeat request frame, flexible from v4.
func heartbeat(corr int32, clientID *string, v int16) []byte {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = "g"
	return frameOf(corr, clientID, versioned(req, v))
}

// produceFrame returns a Produce frame with acks and about recordBytes of
// records.
func produceFrame(corr int32, v int16, acks int16, recordBytes int) []byte {
	req := produceRequest(v, 1, 1, recordBytes)
	req.Acks = acks
	return frameOf(corr, nil, req)
}

// answerAll answers every request with its empty response, and nothing for
// Produce with acks=0.
func answerAll(_ context.Context, req *Request) (kmsg.Response, error) {
	if p, ok := req.Msg.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	return req.Msg.ResponseKind(), nil
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	const n = 8
	var finished atomic.Int32
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 0 {
			// The first request finishes last.
			for finished.Load() < n-1 {
				time.Sleep(time.Millisecond)
			}
		} else {
			defer finished.Add(1)
			time.Sleep(time.Duration(n-req.Header.CorrelationID) * time.Millisecond)
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())

	var frames [][]byte
	for corr := int32(0); corr < n; corr++ {
		switch corr {
		case 3: // acks=0: no response
			frames = append(frames, produceFrame(corr, 9, 0, 100))
		case 5: // a non-flexible version in between
			frames = append(frames, heartbeat(corr, strPtr("c"), 0))
		default:
			frames = append(frames, heartbeat(corr, strPtr("c"), 4))
		}
	}
	c.sendFrames(frames...)
	for corr := int32(0); corr < n; corr++ {
		if corr == 3 {
			continue
		}
		v := int16(4)
		if corr == 5 {
			v = 0
		}
		got, resp := c.readResponse(12, v)
		if got != corr {
			t.Fatalf("response %d arrived in place of %d", got, corr)
		}
		if resp.Key() != 12 {
			t.Fatalf("response key %d", resp.Key())
		}
	}
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}

// TestApiVersionsUnsupportedVersion: KIP-511.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	versions := func(key int16) (int16, int16, bool) {
		if key == apiKeyApiVersions {
			return 0, 3, true
		}
		return allVersions(key)
	}
	s := startServer(t, Config{}, versions, answerAll)
	c := dialRaw(t, s.Addr())

	for _, tc := range []struct {
		corr  int32
		frame []byte
	}{
		// v127: unknown to everyone, header v2, a body we cannot read.
		{11, cat(fixedHeader(18, 127, 11), clientIDBytes(strPtr("future")), []byte{0}, []byte{0xde, 0xad})},
		// v4: known to kmsg but above the advertised 3.
		{12, frameOf(12, strPtr("c"), versioned(kmsg.NewPtrApiVersionsRequest(), 4))},
		// A header that cannot be parsed past the correlation id.
		{13, cat(fixedHeader(18, 99, 13), []byte{0x7f})},
	} {
		c.sendFrames(tc.frame)
		corr, r := c.readResponse(apiKeyApiVersions, 0)
		resp := r.(*kmsg.ApiVersionsResponse)
		if corr != tc.corr {
			t.Fatalf("correlation id %d, want %d", corr, tc.corr)
		}
		if resp.ErrorCode != 35 {
			t.Fatalf("error code %d, want 35", resp.ErrorCode)
		}
		if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 ||
			resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 3 {
			t.Fatalf("api keys %+v", resp.ApiKeys)
		}
	}

	// The client retries at v3 on the same connection.
	c.sendFrames(frameOf(14, strPtr("c"), versioned(kmsg.NewPtrApiVersionsRequest(), 3)))
	if corr, _ := c.readResponse(apiKeyApiVersions, 3); corr != 14 {
		t.Fatalf("correlation id %d", corr)
	}
}

func TestBadRequestsCloseConn(t *testing.T) {
	versions := func(key int16) (int16, int16, bool) {
		switch key {
		case 7: // not served
			return 0, 0, false
		case 12: // served from v1 to v3
			return 1, 3, true
		}
		return allVersions(key)
	}
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"unknown api key", sized(cat(fixedHeader(999, 0, 1), clientIDBytes(nil)))},
		{"key not served", sized(cat(fixedHeader(7, 3, 1), clientIDBytes(nil), []byte{0, 0}))},
		{"version above max", sized(heartbeat(1, nil, 4))},
		{"version below min", sized(heartbeat(1, nil, 0))},
		{"body does not decode", sized(cat(fixedHeader(12, 1, 1), clientIDBytes(nil), []byte{0, 9, 'g'}))},
		{"header does not decode", sized(cat(fixedHeader(12, 1, 1), []byte{0, 9, 'g'}))},
		{"size below a header", []byte{0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0}},
		{"zero size", []byte{0, 0, 0, 0}},
	}
	s := startServer(t, Config{}, versions, answerAll)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, s.Addr())
			c.send(tt.bytes)
			c.expectClosed()
		})
	}
	// The server itself is fine.
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(5, nil, 2))
	if corr, _ := c.readResponse(12, 2); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
	waitFor(t, "connections closed", func() bool { return s.ConnCount() == 1 })
}

// TestOversizedFramesClose: the size prefix (and for mid-sized frames the
// api key) decides; no body is awaited and no buffer allocated.
func TestOversizedFramesClose(t *testing.T) {
	cfg := Config{MaxRequestBytes: 64 << 20, MaxOtherBytes: 4 << 10, ReadTimeout: time.Minute}
	s := startServer(t, cfg, nil, answerAll)

	allocated := measureAlloc(func() {
		// Above socket.request.max.bytes: the size alone decides.
		c := dialRaw(t, s.Addr())
		c.send([]byte{0x7f, 0xff, 0xff, 0xff})
		c.expectClosed()

		// Above the non-Produce cap: size and key decide.
		c = dialRaw(t, s.Addr())
		c.send([]byte{0x02, 0, 0, 0, 0, 3}) // 32 MiB Metadata
		c.expectClosed()
	})
	if allocated > 8<<20 {
		t.Errorf("refusing oversized frames allocated %d bytes", allocated)
	}
	if used := s.budget.inUse(); used != 0 {
		t.Errorf("budget in use %d", used)
	}

	// A Produce above the non-Produce cap is served.
	c := dialRaw(t, s.Addr())
	c.sendFrames(produceFrame(3, 9, 1, 10<<10))
	if corr, _ := c.readResponse(0, 9); corr != 3 {
		t.Fatalf("correlation id %d", corr)
	}
	// So is a non-Produce frame of exactly the cap.
	idLen := (4 << 10) - len(heartbeat(4, strPtr(""), 3))
	frame := heartbeat(4, strPtr(strings.Repeat("x", idLen)), 3)
	if len(frame) != 4<<10 {
		t.Fatalf("frame %d bytes", len(frame))
	}
	c.sendFrames(frame)
	if corr, _ := c.readResponse(12, 3); corr != 4 {
		t.Fatalf("correlation id %d", corr)
	}
}

func TestSlowFrameDropped(t *testing.T) {
	const readTimeout = 150 * time.Millisecond
	s := startServer(t, Config{ReadTimeout: readTimeout}, nil, answerAll)

	t.Run("stalled", func(t *testing.T) {
		c := dialRaw(t, s.Addr())
		frame := sized(heartbeat(1, nil, 4))
		start := time.Now()
		c.send(frame[:10])
		c.expectClosed()
		if elapsed := time.Since(start); elapsed < readTimeout {
			t.Fatalf("closed after %s, before the read timeout", elapsed)
		}
	})
	t.Run("trickling", func(t *testing.T) {
		// Every byte comes well within the timeout, the whole frame does not.
		c := dialRaw(t, s.Addr())
		frame := sized(heartbeat(1, strPtr(strings.Repeat("x", 100)), 4))
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			for _, b := range frame {
				if _, err := c.nc.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(readTimeout / 10)
			}
		}()
		c.expectClosed()
		<-closed
	})
	t.Run("slow but in time", func(t *testing.T) {
		c := dialRaw(t, s.Addr())
		frame := sized(heartbeat(2, nil, 4))
		c.send(frame[:3])
		time.Sleep(readTimeout / 3)
		c.send(frame[3:])
		if corr, _ := c.readResponse(12, 4); corr != 2 {
			t.Fatalf("correlation id %d", corr)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	const idle = 100 * time.Millisecond
	release := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 1 {
			<-release
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{IdleTimeout: idle}, nil, h)

	start := time.Now()
	c := dialRaw(t, s.Addr())
	c.expectClosed()
	if elapsed := time.Since(start); elapsed < idle {
		t.Fatalf("closed after %s", elapsed)
	}

	// A request in flight for several idle timeouts keeps it open.
	c = dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4))
	time.Sleep(3 * idle)
	close(release)
	if corr, _ := c.readResponse(12, 4); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	// Then, idle again, it closes.
	c.expectClosed()
	waitFor(t, "no connections", func() bool { return s.ConnCount() == 0 })
}

func TestHandlerPanicClosesOnlyThatConn(t *testing.T) {
	var logs logBuffer
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if id := req.Header.ClientID; id != nil && *id == "boom" {
			panic("handler bug")
		}
		return answerAll(ctx, req)
	}
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := startServer(t, cfg, nil, h)

	good := dialRaw(t, s.Addr())
	good.sendFrames(heartbeat(1, strPtr("fine"), 4))
	good.readResponse(12, 4)

	bad := dialRaw(t, s.Addr())
	bad.sendFrames(heartbeat(1, strPtr("boom"), 4))
	bad.expectClosed()

	good.sendFrames(heartbeat(2, strPtr("fine"), 4))
	if corr, _ := good.readResponse(12, 4); corr != 2 {
		t.Fatalf("correlation id %d", corr)
	}
	out := logs.String()
	for _, want := range []string{"level=ERROR", "handler panic", "api_key=12", "client_id=boom", "handler bug"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}

func TestHandlerErrorsCloseConn(t *testing.T) {
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		switch *req.Header.ClientID {
		case "error":
			return nil, errors.New("no such thing")
		case "wrong-key":
			return kmsg.NewPtrMetadataResponse(), nil
		case "typed-nil":
			var resp *kmsg.HeartbeatResponse
			return resp, nil
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	for _, id := range []string{"error", "wrong-key"} {
		t.Run(id, func(t *testing.T) {
			c := dialRaw(t, s.Addr())
			c.sendFrames(heartbeat(1, strPtr(id), 4))
			c.expectClosed()
		})
	}
	t.Run("typed nil is no response", func(t *testing.T) {
		c := dialRaw(t, s.Addr())
		c.sendFrames(heartbeat(1, strPtr("typed-nil"), 4), heartbeat(2, strPtr("ok"), 4))
		if corr, _ := c.readResponse(12, 4); corr != 2 {
			t.Fatalf("correlation id %d", corr)
		}
	})
}

func TestShutdownWaitsForInFlight(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		close(started)
		<-release
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	idle := dialRaw(t, s.Addr())
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(7, nil, 4))
	<-started

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	// The idle connection closes, the busy one waits.
	idle.expectClosed()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	if nc, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		_ = nc.Close()
		t.Fatal("a new connection was accepted during Shutdown")
	}
	close(release)
	if corr, _ := c.readResponse(12, 4); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := s.ConnCount(); n != 0 {
		t.Fatalf("%d connections after Shutdown", n)
	}
}

func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	cancelled := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4))
	waitFor(t, "request in flight", func() bool { return s.budget.inUse() > 0 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	<-cancelled
	c.expectClosed()
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}

func TestCloseCancelsHandlers(t *testing.T) {
	cancelled := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4))
	waitFor(t, "request in flight", func() bool { return s.budget.inUse() > 0 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-cancelled
	c.expectClosed()
	if err := s.Listen(); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Listen after Close: %v", err)
	}
}

func TestMaxInFlightPerConn(t *testing.T) {
	var started atomic.Int32
	release := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		started.Add(1)
		<-release
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{MaxInFlightPerConn: 2}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(0, nil, 4), heartbeat(1, nil, 4), heartbeat(2, nil, 4), heartbeat(3, nil, 4))
	waitFor(t, "two handlers", func() bool { return started.Load() == 2 })
	time.Sleep(30 * time.Millisecond)
	if n := started.Load(); n != 2 {
		t.Fatalf("%d handlers started with a limit of 2", n)
	}
	close(release)
	for corr := int32(0); corr < 4; corr++ {
		if got, _ := c.readResponse(12, 4); got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
	}
}

func TestInFlightBudget(t *testing.T) {
	// Frame pool 896 KiB (reserve 64 KiB, 416 KiB per address), decode
	// pool 128 KiB, so non-Produce frames up to 1 KiB.
	const budgetBytes = 1 << 20
	var started atomic.Int32
	release := make(chan struct{}, 10)
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		started.Add(1)
		<-release
		return answerAll(ctx, req)
	}
	cfg := Config{MaxInFlightBytes: budgetBytes, MaxRequestBytes: 400 << 10}
	s := startServer(t, cfg, nil, h)
	if s.cfg.MaxOtherBytes != 1<<10 {
		t.Fatalf("non-Produce cap %d, want 1 KiB (decode pool / %d)", s.cfg.MaxOtherBytes, decodeAmplification)
	}

	// 300 KiB in flight on one connection...
	a := dialRaw(t, s.Addr())
	a.sendFrames(produceFrame(1, 9, 1, 300<<10))
	waitFor(t, "first produce", func() bool { return started.Load() == 1 })
	if used := s.budget.inUse(); used < 300<<10 || used > 301<<10 {
		t.Fatalf("a 300 KiB Produce holds %d bytes of the frame pool", used)
	}
	// ...so another 300 KiB from the same address waits for it, though
	// the pool has room: one address holds at most half of it.
	b := dialRaw(t, s.Addr())
	b.sendFrames(produceFrame(2, 9, 1, 300<<10))
	time.Sleep(30 * time.Millisecond)
	if n := started.Load(); n != 1 {
		t.Fatalf("%d handlers started beyond the address's share", n)
	}
	release <- struct{}{}
	a.readResponse(0, 9)
	waitFor(t, "second produce", func() bool { return started.Load() == 2 })
	release <- struct{}{}
	b.readResponse(0, 9)

	// A non-Produce request holds its frame, and what it decoded to until
	// its handler returns.
	a.sendFrames(heartbeat(4, strPtr(strings.Repeat("x", 500)), 4))
	waitFor(t, "heartbeat", func() bool { return started.Load() == 3 })
	if used := s.InFlightBytes(); used < 500 || used > 4<<10 {
		t.Fatalf("heartbeat holds %d bytes of budget", used)
	}
	release <- struct{}{}
	a.readResponse(12, 4)
	waitFor(t, "budget released", func() bool { return s.InFlightBytes() == 0 })
	if hw := s.budget.total.peak; hw > budgetBytes {
		t.Fatalf("high water %d above the budget", hw)
	}
}

// TestConfigCheck: Listen refuses a budget in which a frame of
// socket.request.max.bytes could never be admitted, naming both keys.
func TestConfigCheck(t *testing.T) {
	s := NewServer(Config{Addr: "127.0.0.1:0", MaxInFlightBytes: 64 << 20, Logger: testLogger()}, allVersions, answerAll)
	err := s.Listen()
	if err == nil {
		s.Close()
		t.Fatal("a 100 MiB frame cap with a 64 MiB budget was accepted")
	}
	for _, key := range []string{"socket.request.max.bytes", "queued.max.request.bytes"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	s = NewServer(Config{Addr: "127.0.0.1:0", MaxInFlightBytes: 64 << 20, MaxOtherBytes: 1 << 20, MaxRequestBytes: 16 << 20, Logger: testLogger()}, allVersions, answerAll)
	if err := s.Listen(); err == nil || !strings.Contains(err.Error(), "decode pool") {
		s.Close()
		t.Fatalf("a 1 MiB non-Produce cap with an 8 MiB decode pool: %v", err)
	}
	if err := (Config{}).withDefaults().check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestHalfClosedClientGetsResponses: a client that sends and then shuts
// its write side still gets its answers.
func TestHalfClosedClientGetsResponses(t *testing.T) {
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		time.Sleep(20 * time.Millisecond)
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4), heartbeat(2, nil, 4))
	if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	for corr := int32(1); corr <= 2; corr++ {
		if got, _ := c.readResponse(12, 4); got != corr {
			t.Fatalf("correlation id %d", got)
		}
	}
	c.expectClosed()
	waitFor(t, "no connections", func() bool { return s.ConnCount() == 0 })
}

func TestConnCount(t *testing.T) {
	s := startServer(t, Config{}, nil, answerAll)
	var conns []*rawConn
	for i := range 3 {
		c := dialRaw(t, s.Addr())
		c.sendFrames(heartbeat(int32(i), nil, 4))
		c.readResponse(12, 4)
		conns = append(conns, c)
	}
	if n := s.ConnCount(); n != 3 {
		t.Fatalf("ConnCount %d", n)
	}
	for _, c := range conns {
		_ = c.nc.Close()
	}
	waitFor(t, "no connections", func() bool { return s.ConnCount() == 0 })
}

func TestServeLifecycle(t *testing.T) {
	s := NewServer(Config{Addr: "127.0.0.1:0", Logger: testLogger()}, allVersions, answerAll)
	if s.Addr() != nil {
		t.Fatal("Addr before Listen")
	}
	if err := s.Serve(); err == nil {
		t.Fatal("Serve before Listen succeeded")
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err == nil {
		t.Fatal("second Listen succeeded")
	}
	if addr, ok := s.Addr().(*net.TCPAddr); !ok || addr.Port == 0 {
		t.Fatalf("Addr %v", s.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after Shutdown: %v", err)
	}
	if err := NewServer(Config{}, nil, nil).Listen(); err == nil {
		t.Fatal("Listen without handler succeeded")
	}
}

func TestInFlightBytesReported(t *testing.T) {
	release := make(chan struct{})
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		<-release
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	frame := produceFrame(1, 9, 1, 1000)
	c.sendFrames(frame)
	// The frame and what its decoded topics and partitions hold.
	waitFor(t, "charge", func() bool {
		n := s.InFlightBytes()
		return n >= int64(len(frame)) && n <= int64(len(frame))+1<<10
	})
	close(release)
	c.readResponse(0, 9)
	waitFor(t, "release", func() bool { return s.InFlightBytes() == 0 })
}

// panickyResponse is a Heartbeat response whose encoder panics.
type panickyResponse struct{ *kmsg.HeartbeatResponse }

func (panickyResponse) AppendTo([]byte) []byte { panic("cannot encode") }

// TestMalformedResponseClosesConn: a response that cannot be encoded closes
// the connection instead of crashing or hanging it.
func TestMalformedResponseClosesConn(t *testing.T) {
	var logs logBuffer
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 2 {
			return panickyResponse{kmsg.NewPtrHeartbeatResponse()}, nil
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4), heartbeat(2, nil, 4), heartbeat(3, nil, 4))
	if corr, _ := c.readResponse(12, 4); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	c.expectClosed()
	if out := logs.String(); !strings.Contains(out, "encoding a response panicked") || !strings.Contains(out, "api_key=12") {
		t.Errorf("no log of the panic:\n%s", out)
	}
	waitFor(t, "connection gone", func() bool { return s.ConnCount() == 0 })
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}

// TestCloseInOrder: a handler error wrapping ErrCloseInOrder closes the
// connection after the responses to the requests before it, even when
// those finish later; nothing after it is answered.
func TestCloseInOrder(t *testing.T) {
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		switch req.Header.CorrelationID {
		case 1:
			time.Sleep(100 * time.Millisecond)
			return answerAll(ctx, req)
		case 2:
			return nil, fmt.Errorf("refused: %w", ErrCloseInOrder)
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, nil, 4), heartbeat(2, nil, 4), heartbeat(3, nil, 4))
	if corr, _ := c.readResponse(12, 4); corr != 1 {
		t.Fatalf("first response has correlation id %d, want 1", corr)
	}
	if b, err := c.readFrame(); err == nil {
		t.Fatalf("a response (%d bytes) after the request that closes the connection", len(b))
	}
}
