// Regressions found by a review of the two-pool budget's predecessor.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestAgedOverShareHeadKeepsNoRoom: a source at its share waits for its
// own frames however long its head has waited, and no room is kept for
// it, so another source's frame that fits is granted at once. (An aged
// head used to be granted past the share and, until then, to freeze the
// pool: two 14-byte Metadata headers made a 1 MiB Produce of another
// address wait 2.8 s.)
func TestAgedOverShareHeadKeepsNoRoom(t *testing.T) {
	b := newTestBudget()
	b.share = 500
	b.aging = 20 * time.Millisecond
	a, c := testSource(t, b, "10.0.0.1"), testSource(t, b, "10.0.0.2")
	held := mustAcquire(t, b, a, 450)
	second := acquireAsync(b, a, 400, farAway)
	waitFor(t, "a's second frame waiting", func() bool { return waitersOf(b, a) == 1 })
	time.Sleep(3 * b.aging)
	expectPending(t, second, "a frame that would take its source past its share")
	start := time.Now()
	tk := mustAcquire(t, b, c, 500)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Fatalf("c's frame that fits waited %v", took)
	}
	tk.release()
	held.release()
	releaseTicket(expectGranted(t, second, "a's second frame once its first is gone"))
}

// TestIdleHeadersHoldOnlyTheirBytes: Metadata headers declaring the
// largest non-Produce frame and sending nothing more hold their declared
// bytes only (they were charged 128 times that, half the default
// budget), and another address's 1 MiB Produce is answered promptly
// after they have waited past aging.
func TestIdleHeadersHoldOnlyTheirBytes(t *testing.T) {
	s := startServer(t, Config{ReadTimeout: 4 * time.Second}, nil, answerAll)
	max := s.cfg.MaxOtherBytes
	for range 2 {
		dialFrom(t, s.Addr(), "127.0.0.2").declare(max, 3, 12, 10)
	}
	waitFor(t, "the headers admitted", func() bool { return s.InFlightBytes() > 0 })
	time.Sleep(1200 * time.Millisecond)
	if used := s.InFlightBytes(); used > 2*int64(max) {
		t.Fatalf("two headers declaring %d bytes hold %d", max, used)
	}
	other := dialFrom(t, s.Addr(), "127.0.0.3")
	start := time.Now()
	other.sendFrames(produceFrame(2, 9, 1, 1<<20))
	other.readResponse(0, 9)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a 1 MiB Produce from another address waited %v", took)
	}
}

// TestHeaderOnlySmallFramesHoldNothing: small frames are admitted once
// whole, so header-only Heartbeats from 8 addresses, 4 each, hold no
// budget (each was charged 1 MiB of the small-frame reserve, and they
// filled it), and a well-behaved Heartbeat is answered promptly.
func TestHeaderOnlySmallFramesHoldNothing(t *testing.T) {
	s := startServer(t, Config{ReadTimeout: 4 * time.Second}, nil, answerAll)
	for a := range 8 {
		for range 4 {
			dialFrom(t, s.Addr(), fmt.Sprintf("127.0.3.%d", a+1)).declare(8192, 12, 4, 10)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if used := s.InFlightBytes(); used != 0 {
		t.Fatalf("32 header-only Heartbeats hold %d bytes", used)
	}
	answeredWithin(t, dialFrom(t, s.Addr(), "127.0.0.50"), time.Second, "heartbeat beside header-only frames")
}

// TestFrameAboveShareRefused: a budget in which a frame could take more
// than one address's share is refused by Listen; the budget itself
// refuses such a ticket rather than charging it less than it holds.
func TestFrameAboveShareRefused(t *testing.T) {
	frames, _ := newPools(Config{MaxInFlightBytes: 64 << 20}.withDefaults())
	src, _ := frames.openConn(sourceKey{other: "x"})
	if _, err := frames.acquire(t.Context(), nil, src, 100<<20, farAway); !errors.Is(err, errTooLarge) {
		t.Fatalf("a 100 MiB frame with a 64 MiB budget: %v", err)
	}
}

// produceWithTags is a Produce v9 frame with one topic and partition whose
// records are pad bytes, and n tagged fields at the request level.
func produceWithTags(n, pad int) []byte {
	b := fixedHeader(apiKeyProduce, 9, 1)
	b = append(b, clientIDBytes(nil)...)
	b = append(b, 0)          // header tags
	b = append(b, 0)          // null transactional id
	b = append(b, 0, 1)       // acks
	b = append(b, 0, 0, 0, 1) // timeout
	b = binary.AppendUvarint(b, 2)
	b = append(b, 2, 't')          // topic "t"
	b = binary.AppendUvarint(b, 2) // one partition
	b = append(b, 0, 0, 0, 0)      // index
	b = binary.AppendUvarint(b, uint64(pad+1))
	b = append(b, make([]byte, pad)...)
	b = append(b, 0) // partition tags
	b = append(b, 0) // topic tags
	b = binary.AppendUvarint(b, uint64(n))
	for i := range n {
		b = binary.AppendUvarint(b, uint64(i))
		b = append(b, 0)
	}
	return b
}

// TestProduceTagsBounded: a Produce section with more than maxProduceTags
// tagged fields is refused (a 2.4 MB frame with 100,000 of them allocated
// 10.5 MB against 4.8 MB of decode room), and what a section within the
// limit allocates stays within the room the pre-scan charges.
func TestProduceTagsBounded(t *testing.T) {
	if _, err := DecodeRequest(produceWithTags(maxProduceTags+1, 1<<20)); !errors.Is(err, ErrMalformedBody) {
		t.Fatalf("%d tags: %v", maxProduceTags+1, err)
	}
	if raceEnabled {
		return
	}
	f := produceWithTags(maxProduceTags, 0)
	hdr, _ := parseFixedHeader(f)
	msg := requestForKey(apiKeyProduce)
	msg.SetVersion(hdr.APIVersion)
	_, _, room, err := planDecode(f, hdr, msg, produceRoom(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	alloc := measureAlloc(func() { _, err = DecodeRequest(f) })
	if err != nil {
		t.Fatal(err)
	}
	// DecodeRequest also allocates the Request and parses the header.
	if alloc > room+512 {
		t.Fatalf("decoding allocated %d, %d charged", alloc, room)
	}
}

// TestRefusedConnectionsLogRateLimited: a client redialling past its
// connection limit gets one Info line per refusedLogEvery, not one each.
func TestRefusedConnectionsLogRateLimited(t *testing.T) {
	var buf logBuffer
	s := NewServer(Config{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}, allVersions, answerAll)
	s.mu.Lock()
	for range 100 {
		s.logRefusedLocked("10.0.0.1:1", errTooManyConns)
	}
	s.mu.Unlock()
	if n := strings.Count(buf.String(), "refusing connection"); n != 1 {
		t.Fatalf("%d Info lines for 100 refused connections", n)
	}
}
