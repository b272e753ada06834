package sasl

import (
	"testing"
)

// FuzzExchange feeds arbitrary client tokens to every mechanism's
// exchange, up to three steps: it must never panic, and never succeed
// without the password.
func FuzzExchange(f *testing.F) {
	f.Add(uint8(0), []byte("\x00alice\x00secret"), []byte(""), []byte(""))
	f.Add(uint8(1), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"), []byte("x"))
	f.Add(uint8(2), []byte("n,a=bob,n=alice,r=abc"), []byte("c=biws,r=abcdef,p="), []byte(""))
	f.Add(uint8(1), []byte("y,,n=alice,r=a,ext=1"), []byte("c=eSws,r=a,x=1,p=QUFB"), []byte(""))
	f.Add(uint8(2), []byte("n,,m=ext,n=alice,r=abc"), []byte(""), []byte(""))
	s := testServer(f)
	mechs := s.Mechanisms()
	f.Fuzz(func(t *testing.T, m uint8, t1, t2, t3 []byte) {
		x, err := s.Start(mechs[int(m)%len(mechs)])
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range [][]byte{t1, t2, t3} {
			_, done, err := x.Step(tok)
			if err != nil {
				return
			}
			if done {
				if x.User() != "alice" {
					t.Fatalf("done as %q", x.User())
				}
				if mechs[int(m)%len(mechs)] != Plain {
					t.Fatalf("a SCRAM exchange succeeded on fuzzed input")
				}
				return
			}
		}
	})
}
