package sasl

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// A SCRAM-SHA-256 exchange captured from kcat 1.7.1 / librdkafka 2.0.2
// (user admin, password secret): the client-final nonce is the client
// nonce followed by the whole server-first nonce.
const (
	kcatClientFirst = "n,,n=admin,r=.gyd6/R:/|6@.z1.@u}ZMof-hR{/H8rN"
	kcatServerNonce = "200cfddb7a1f092505ad0f5a2ba6269a59b8ae79480e8d97"
	kcatSalt        = "zcwGIz3utoMBwo9nXIUZZGGZVZUmqCr9lVS9hiZFuzE="
	kcatServerFirst = "r=.gyd6/R:/|6@.z1.@u}ZMof-hR{/H8rN" + kcatServerNonce + ",s=" + kcatSalt + ",i=4096"
	kcatClientFinal = "c=biws,r=.gyd6/R:/|6@.z1.@u}ZMof-hR{/H8rN.gyd6/R:/|6@.z1.@u}ZMof-hR{/H8rN" + kcatServerNonce +
		",p=Hc8WNRoG980IC1w+X1sZ+S+lLyQAIp+1CDgERYqjFRs="
)

// kcatExchange is a SCRAM-SHA-256 exchange whose stored credential is
// admin's with password, at the captured salt, and whose server nonce is
// the captured one.
func kcatExchange(t *testing.T, password string) *scramExchange {
	t.Helper()
	salt, err := base64.StdEncoding.DecodeString(kcatSalt)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := derive(scram.SHA256, "admin", password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	x, err := newScramExchange(ScramSHA256, func(user, mech string) (Credential, bool) {
		return cred, user == "admin" && mech == ScramSHA256
	}, func() string { return kcatServerNonce })
	if err != nil {
		t.Fatal(err)
	}
	out, done, err := x.Step([]byte(kcatClientFirst))
	if err != nil || done || string(out) != kcatServerFirst {
		t.Fatalf("server-first: %q %v %v", out, done, err)
	}
	return x
}

func TestScramLibrdkafkaNonce(t *testing.T) {
	x := kcatExchange(t, "secret")
	out, done, err := x.Step([]byte(kcatClientFinal))
	if err != nil || !done || !strings.HasPrefix(string(out), "v=") {
		t.Fatalf("client-final: %q %v %v", out, done, err)
	}
	if x.User() != "admin" {
		t.Fatalf("user %q", x.User())
	}

	// The same messages against another password's credential fail.
	x = kcatExchange(t, "not-secret")
	if _, _, err := x.Step([]byte(kcatClientFinal)); err == nil || x.User() != "" {
		t.Fatalf("wrong credential accepted: %v", err)
	}
}

// TestScramLibrdkafkaNonceTampered: only the exact doubled nonce takes the
// librdkafka path, and it checks the channel binding and the proof.
func TestScramLibrdkafkaNonceTampered(t *testing.T) {
	c1 := ".gyd6/R:/|6@.z1.@u}ZMof-hR{/H8rN"
	nonce := c1 + kcatServerNonce
	proof := ",p=Hc8WNRoG980IC1w+X1sZ+S+lLyQAIp+1CDgERYqjFRs="
	for name, c2 := range map[string]string{
		"other prefix":    "c=biws,r=x" + nonce + proof,
		"tripled":         "c=biws,r=" + c1 + c1 + nonce + proof,
		"channel binding": "c=eSws,r=" + c1 + nonce + proof,
		"proof":           "c=biws,r=" + c1 + nonce + ",p=Ic8WNRoG980IC1w+X1sZ+S+lLyQAIp+1CDgERYqjFRs=",
		"extension":       "c=biws,r=" + c1 + nonce + ",x=1" + proof,
	} {
		x := kcatExchange(t, "secret")
		if out, done, err := x.Step([]byte(c2)); err == nil || done || x.User() != "" {
			t.Errorf("%s: accepted (%q)", name, out)
		}
	}
}

// TestVerifyProofMatchesXdg: on standard exchanges driven by xdg-go's
// client, verifyProof gives xdg-go's server's answers: the same
// ServerSignature for a right password, a refusal for a wrong one.
func TestVerifyProofMatchesXdg(t *testing.T) {
	s := testServer(t)
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		for _, pass := range []string{"secret", "wrong", ""} {
			ex, err := s.Start(mech)
			if err != nil {
				t.Fatal(err)
			}
			x := ex.(*scramExchange)
			cl, err := hashFor(mech).NewClientUnprepped("alice", pass, "")
			if err != nil {
				t.Fatal(err)
			}
			conv := cl.NewConversation()
			c1, _ := conv.Step("")
			s1, _, err := x.Step([]byte(c1))
			if err != nil {
				t.Fatal(err)
			}
			c2, err := conv.Step(string(s1))
			if err != nil {
				t.Fatal(err)
			}
			i := strings.LastIndex(c2, ",p=")
			proof, _ := base64.StdEncoding.DecodeString(c2[i+3:])
			sig, ok := verifyProof(newHash(mech), x.cred.StoredKey, x.cred.ServerKey, x.c1b+","+x.s1+","+c2[:i], proof)
			out, _, xerr := x.Step([]byte(c2))
			if ok != (xerr == nil) {
				t.Fatalf("%s %q: verifyProof %v, xdg-go %v", mech, pass, ok, xerr)
			}
			if ok && string(out) != "v="+base64.StdEncoding.EncodeToString(sig) {
				t.Fatalf("%s: server signatures differ: %q", mech, out)
			}
		}
	}
}
