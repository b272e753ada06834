package sasl

import (
	"bytes"
	"testing"
)

// fuzzNonce is the server nonce of the fuzzed SCRAM exchanges: fixed, so
// that seeds (and what the fuzzer derives from them) carry the nonce the
// client-final message must repeat, and reach the proof check.
const fuzzNonce = "fuzznonce"

// FuzzExchange feeds arbitrary client tokens to every mechanism's
// exchange, up to three steps: it must never panic, never succeed on a
// SCRAM exchange (the fuzzer cannot forge a proof), and a PLAIN exchange
// only with alice's password.
func FuzzExchange(f *testing.F) {
	f.Add(uint8(0), []byte("\x00alice\x00secret"), []byte(""), []byte(""))
	f.Add(uint8(0), []byte("alice\x00alice\x00secreT"), []byte(""), []byte(""))
	f.Add(uint8(1), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc"+fuzzNonce+",p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), []byte("x"))
	f.Add(uint8(2), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc"+fuzzNonce+",p="+string(bytes.Repeat([]byte("A"), 86))+"=="), []byte(""))
	f.Add(uint8(1), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abcabc"+fuzzNonce+",p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="), []byte(""))
	f.Add(uint8(2), []byte("n,a=bob,n=alice,r=abc"), []byte("c=biws,r=abcdef,p="), []byte(""))
	f.Add(uint8(1), []byte("y,,n=alice,r=a,ext=1"), []byte("c=eSws,r=a,x=1,p=QUFB"), []byte(""))
	f.Add(uint8(2), []byte("n,,m=ext,n=alice,r=abc"), []byte(""), []byte(""))
	s := testServer(f)
	s.nonce = func() string { return fuzzNonce }
	mechs := s.Mechanisms()
	f.Fuzz(func(t *testing.T, m uint8, t1, t2, t3 []byte) {
		mech := mechs[int(m)%len(mechs)]
		x, err := s.Start(mech)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range [][]byte{t1, t2, t3} {
			_, done, err := x.Step(tok)
			if err != nil {
				if x.User() != "" {
					t.Fatalf("failed exchange reports user %q", x.User())
				}
				return
			}
			if done {
				if x.User() != "alice" {
					t.Fatalf("done as %q", x.User())
				}
				if mech != Plain {
					t.Fatalf("a SCRAM exchange succeeded on fuzzed input")
				}
				if parts := bytes.Split(t1, []byte{0}); len(parts) != 3 || string(parts[2]) != "secret" {
					t.Fatalf("PLAIN succeeded without the password: %q", t1)
				}
				return
			}
		}
	})
}
