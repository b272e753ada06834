package wire

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func throttlingOn() bool { return true }

// A response held back for a throttle (pre-KIP-219 version) is let go by
// Shutdown: graceful shutdown must not wait for the throttle.
func TestDelayedResponseReleasedByShutdown(t *testing.T) {
	var handled atomic.Bool
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 1 {
			req.Throttle(time.Hour, true)
		}
		defer handled.Store(true)
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	c.sendFrames(heartbeat(1, strPtr("c"), 0))
	waitFor(t, "request handled", handled.Load)
	time.Sleep(50 * time.Millisecond) // the writer holds the response
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Shutdown(ctx)
	t.Logf("Shutdown returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("graceful Shutdown could not drain a connection holding a throttled response")
	}
}

// The delayed response must not keep its frame (or those pipelined behind
// it) charged to the shared in-flight budget for the whole throttle.
func TestDelayedResponseReleasesBudget(t *testing.T) {
	const throttle = 3 * time.Second
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		if req.Header.CorrelationID == 0 {
			time.Sleep(100 * time.Millisecond) // a raft commit
			req.Throttle(throttle, true)
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{WriteTimeout: 200 * time.Millisecond, Throttling: throttlingOn}, nil, h)
	c := dialRaw(t, s.Addr())
	var frames [][]byte
	for i := range 8 {
		frames = append(frames, produceFrame(int32(i), 5, 1, 1<<20))
	}
	c.sendFrames(frames...)
	time.Sleep(throttle / 2)
	held := s.budget.inUse()
	t.Logf("in-flight budget held %v into a %v throttle: %d bytes", throttle/2, throttle, held)
	if held > 2<<20 {
		t.Errorf("a throttled connection holds %d bytes of the shared budget for its whole throttle", held)
	}
}

// Frames already pipelined behind a throttled request wait out its mute
// before they are read and handled, as in Kafka, which reads one request
// per connection at a time.
func TestPipelinedWaitsOutMute(t *testing.T) {
	var handled atomic.Int32
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		handled.Add(1)
		time.Sleep(20 * time.Millisecond) // e.g. a raft commit
		req.Throttle(time.Hour, false)
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{Throttling: throttlingOn}, nil, h)
	c := dialRaw(t, s.Addr())
	var frames [][]byte
	for i := range 32 {
		frames = append(frames, heartbeat(int32(i), strPtr("c"), 4))
	}
	c.sendFrames(frames...)
	time.Sleep(time.Second)
	if n := handled.Load(); n > 1 {
		t.Errorf("%d of 32 pipelined requests were handled within a second of a one-hour throttle", n)
	}
}
