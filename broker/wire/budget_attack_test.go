//go:build budgetattacks

// Attacks on the in-flight budget that issue 10 asks the broker to survive.
// They fail against today's single FIFO budget, so CI does not run them:
//
//	go test -tags budgetattacks ./broker/wire -run 'Idle|Trickling|Garbage' -v
package wire

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"
)

// declare sends the start of a frame of size bytes: its size prefix and
// the api key and version, then n zero bytes, and nothing more.
func (c *rawConn) declare(size int32, key, v int16, n int) {
	c.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(v))
	b = append(b, make([]byte, n)...)
	c.send(b)
}

// answeredWithin sends a heartbeat on c and fails unless it is answered
// within d.
func answeredWithin(t *testing.T, c *rawConn, d time.Duration, what string) {
	t.Helper()
	start := time.Now()
	c.sendFrames(heartbeat(1, nil, 4))
	c.readResponse(12, 4)
	if took := time.Since(start); took > d {
		t.Fatalf("%s: a well-behaved request waited %v", what, took)
	}
}

// TestIdleHeadersDoNotStarve: connections that declare large frames and
// send nothing hold their declared bytes only, never a worst case of them
// (a 14-byte Metadata header declaring 1 MiB was charged 128 MiB, and two
// of them held the whole default budget), and small requests pass the
// large frames that wait for room, so other clients are still served.
func TestIdleHeadersDoNotStarve(t *testing.T) {
	cfg := Config{MaxInFlightBytes: 256 << 20, ReadTimeout: time.Minute}
	s := startServer(t, cfg, nil, answerAll)
	for range 2 {
		dialRaw(t, s.Addr()).declare(1<<20, 3, 12, 10) // Metadata
	}
	time.Sleep(50 * time.Millisecond)
	// The same address is still served: the headers hold 2 MiB.
	answeredWithin(t, dialRaw(t, s.Addr()), 2*time.Second, "two idle Metadata headers")
	for range 3 {
		dialRaw(t, s.Addr()).declare(100<<20, 0, 9, 10) // Produce
	}
	time.Sleep(50 * time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	answeredWithin(t, dialRaw(t, s.Addr()), 2*time.Second, "three idle 100 MiB Produce headers")
}

// TestTricklingFramesBounded: many connections trickling 90 MiB Produce
// frames hold no more than the frame budget between them, and other
// clients are served.
func TestTricklingFramesBounded(t *testing.T) {
	cfg := Config{MaxInFlightBytes: 256 << 20, MaxRequestBytes: 100 << 20, ReadTimeout: time.Minute}
	s := startServer(t, cfg, nil, answerAll)
	var peak atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if u := s.budget.inUse(); u > peak.Load() {
				peak.Store(u)
			}
		}
	}()
	for range 40 {
		c := dialRaw(t, s.Addr())
		go func() {
			b := binary.BigEndian.AppendUint32(nil, 90<<20)
			b = binary.BigEndian.AppendUint16(b, 0)
			b = binary.BigEndian.AppendUint16(b, 9)
			b = append(b, make([]byte, 1<<20)...)
			_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.nc.Write(b)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	answeredWithin(t, dialRaw(t, s.Addr()), 2*time.Second, "40 connections trickling 90 MiB frames")
	close(stop)
	<-done
	if got := peak.Load(); got > s.budget.capacity {
		t.Fatalf("trickling frames held %d bytes, more than the %d budget", got, s.budget.capacity)
	}
}

// TestGarbageFramesDoNotWedge: complete non-Produce frames that wait for
// decode room while holding their own bytes: 30 garbage 1 MiB frames at
// once, then a heartbeat is answered and both budgets go back to zero.
func TestGarbageFramesDoNotWedge(t *testing.T) {
	s := startServer(t, Config{}, nil, answerAll)
	garbage := make([]byte, 1<<20)
	binary.BigEndian.PutUint16(garbage, 3)      // Metadata
	binary.BigEndian.PutUint16(garbage[2:], 12) // v12
	for i := 4; i < len(garbage); i++ {
		garbage[i] = 0xff
	}
	for range 30 {
		c := dialRaw(t, s.Addr())
		go func() { _, _ = c.nc.Write(sized(garbage)) }()
	}
	time.Sleep(300 * time.Millisecond)
	answeredWithin(t, dialRaw(t, s.Addr()), 5*time.Second, "30 garbage 1 MiB frames")
	waitFor(t, "budget released", func() bool { return s.budget.inUse() == 0 })
}
