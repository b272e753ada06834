package sasl

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdg-go/scram"
)

// TestPlainUnknownUserMock: an unknown user's password is derived as a
// typical real credential's (SCRAM-SHA-512, 4096 iterations, a 32-byte
// per-server salt), not a cheaper one. It failed when the mock was
// SHA-256 while PLAIN checked users' SHA-512 credentials: unknown users
// answered faster.
func TestPlainUnknownUserMock(t *testing.T) {
	type call struct {
		sha512 bool
		salt   []byte
		iters  int
	}
	var calls []call
	orig := deriveFn
	t.Cleanup(func() { deriveFn = orig })
	deriveFn = func(h scram.HashGeneratorFcn, user, pass string, salt []byte, iters int) (Credential, error) {
		calls = append(calls, call{sha512: h().Size() == 64, salt: salt, iters: iters})
		return orig(h, user, pass, salt, iters)
	}
	s := testServer(t)
	for _, tok := range []string{"\x00alice\x00wrong", "\x00nobody\x00wrong"} {
		x, _ := s.Start(Plain)
		if _, _, err := x.Step([]byte(tok)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Fatalf("%q: %v", tok, err)
		}
	}
	real, mock := calls[0], calls[1]
	if !real.sha512 || !mock.sha512 || mock.iters != real.iters || len(mock.salt) != len(real.salt) || !bytes.Equal(mock.salt, s.mock.Salt) {
		t.Fatalf("real user derived with %+v, unknown user with %+v", real, mock)
	}
}

// TestDeriveLimit: PLAIN key derivations run at most the limit at once;
// one that cannot start within its wait fails.
func TestDeriveLimit(t *testing.T) {
	s := testServer(t)
	s.derive = &deriveLimit{slots: make(chan struct{}, 2), wait: time.Minute}
	var running, peak atomic.Int32
	orig := deriveFn
	t.Cleanup(func() { deriveFn = orig })
	deriveFn = func(h scram.HashGeneratorFcn, user, pass string, salt []byte, iters int) (Credential, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		running.Add(-1)
		return orig(h, user, pass, salt, iters)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, _ := s.Start(Plain)
			_, _, _ = x.Step([]byte("\x00nobody\x00pw"))
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Fatalf("%d derivations at once, limit 2", p)
	}
	d := &deriveLimit{slots: make(chan struct{}, 1), wait: 20 * time.Millisecond}
	if err := d.acquire(); err != nil {
		t.Fatal(err)
	}
	if err := d.acquire(); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("a derivation past the limit: %v", err)
	}
	d.release()
	if err := d.acquire(); err != nil {
		t.Fatal(err)
	}
}
