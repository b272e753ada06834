package wire

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottleMutesAndDelays: a throttled request mutes its connection
// (the next request is read only after the throttle) and, asked to,
// holds its own response back; other connections are not slowed.
func TestThrottleMutesAndDelays(t *testing.T) {
	const throttle = 300 * time.Millisecond
	var mu sync.Mutex
	handled := map[int32]time.Time{}
	h := func(ctx context.Context, req *Request) (kmsg.Response, error) {
		mu.Lock()
		handled[req.Header.CorrelationID] = time.Now()
		mu.Unlock()
		switch req.Header.CorrelationID {
		case 1:
			req.Throttle(throttle, false) // KIP-219: answered at once
		case 3:
			req.Throttle(throttle, true) // before KIP-219: answered late
		}
		return answerAll(ctx, req)
	}
	s := startServer(t, Config{}, nil, h)
	c := dialRaw(t, s.Addr())
	other := dialRaw(t, s.Addr())

	start := time.Now()
	c.sendFrames(heartbeat(1, strPtr("c"), 4))
	c.readResponse(12, 4)
	if d := time.Since(start); d > throttle/2 {
		t.Fatalf("a KIP-219 throttled response took %v", d)
	}
	c.sendFrames(heartbeat(2, strPtr("c"), 4))
	other.sendFrames(heartbeat(9, strPtr("o"), 4))
	other.readResponse(12, 4)
	if d := time.Since(start); d > throttle/2 {
		t.Fatalf("another connection waited %v", d)
	}
	c.readResponse(12, 4)
	mu.Lock()
	read2 := handled[2].Sub(start)
	mu.Unlock()
	if read2 < throttle-20*time.Millisecond {
		t.Fatalf("the request after a throttle was handled after %v, within the %v throttle", read2, throttle)
	}

	start = time.Now()
	c.sendFrames(heartbeat(3, strPtr("c"), 4))
	c.readResponse(12, 4)
	if d := time.Since(start); d < throttle-20*time.Millisecond {
		t.Fatalf("a delayed response came after %v, within the %v throttle", d, throttle)
	}
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}
