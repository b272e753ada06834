package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/internal/tlstest"
)

func TestRules(t *testing.T) {
	dn := "CN=alice,OU=ServiceUsers,O=acme,C=US"
	for _, c := range []struct{ rules, want string }{
		{"", dn},
		{"DEFAULT", dn},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT`, "alice"},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U`, "ALICE"},
		{`RULE:^CN=(.*?),OU=(.*?),.*$/$2\/$1/L,DEFAULT`, "serviceusers/alice"},
		{`RULE:^CN=bob.*$/bob/, DEFAULT`, dn},
	} {
		r, err := ParseRules(c.rules)
		if err != nil {
			t.Fatalf("%q: %v", c.rules, err)
		}
		got, err := r.Apply(dn)
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.rules, got, err, c.want)
		}
	}
	r, _ := ParseRules(`RULE:^CN=bob.*$/bob/`)
	if _, err := r.Apply(dn); !errors.Is(err, ErrNoRule) {
		t.Errorf("no matching rule: got %v, want ErrNoRule", err)
	}
	for _, bad := range []string{"KERBEROS", "RULE:abc", "RULE:(/x/", "DEFAULT RULE:a/b/"} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPrincipalAndReload(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	srv := ca.Server("server", "first")
	cli := ca.Client("client", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}})
	s, err := New(Config{KeystoreLocation: srv.Keystore, TruststoreLocation: ca.CAFile, ClientAuth: ClientAuthRequested}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Principal(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{cli.Cert}})
	if err != nil || p != "User:CN=alice,OU=eng,O=acme" {
		t.Fatalf("principal %q, %v", p, err)
	}
	if p, _ := s.Principal(&tls.ConnectionState{}); p != Anonymous {
		t.Fatalf("no certificate: %q", p)
	}
	// A broken key store keeps the certificate in use.
	if err := os.WriteFile(srv.Keystore, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Fatal("reload of a broken key store succeeded")
	}
	if cn := s.cur.Load().cert.Leaf.Subject.CommonName; cn != "first" {
		t.Fatalf("after a failed reload: %q", cn)
	}
	second := ca.Server("second", "second")
	data, _ := os.ReadFile(second.Keystore)
	if err := os.WriteFile(srv.Keystore, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if cn := s.cur.Load().cert.Leaf.Subject.CommonName; cn != "second" {
		t.Fatalf("after reload: %q", cn)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	srv := ca.Server("server", "s")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "needs ssl.keystore.location"},
		{Config{KeystoreLocation: filepath.Join(dir, "missing.pem")}, "no such file"},
		{Config{KeystoreLocation: srv.CertFile}, "no PEM private key"},
		{Config{KeystoreLocation: srv.KeyFile}, "no PEM certificate"},
		{Config{KeystoreLocation: srv.Keystore, ClientAuth: "required"}, "needs ssl.truststore.location"},
		{Config{KeystoreLocation: srv.Keystore, ClientAuth: "maybe"}, "want none, requested or required"},
		{Config{KeystoreLocation: srv.Keystore, PrincipalRules: "nope"}, "ssl.principal.mapping.rules"},
	} {
		_, err := New(c.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestHalfWrittenFiles: a key store or trust store cut short after a whole
// block (a file caught half written) is refused, on load and on reload:
// pem.Decode stops at the cut, and the rest of the chain or of the CAs was
// silently left out.
func TestHalfWrittenFiles(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	srv := ca.Server("server", "first")
	for _, path := range []string{srv.Keystore, ca.CAFile} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut-"+filepath.Base(path))
		// A whole file plus the start of a block that never arrived.
		if err := os.WriteFile(cut, append(data, []byte("-----BEGIN CERTIFICATE-----\nMIIB")...), 0o600); err != nil {
			t.Fatal(err)
		}
		var lerr error
		if path == srv.Keystore {
			_, lerr = loadKeystore(cut, "ssl.keystore.location")
		} else {
			_, lerr = loadTruststore(cut, "ssl.truststore.location")
		}
		if lerr == nil || !strings.Contains(lerr.Error(), "half written") {
			t.Errorf("%s cut short: %v, want a refusal", filepath.Base(path), lerr)
		}
	}
}

// TestRulesNeverEmpty: "$1x" is a group named "1x" in Go (Java: group 1,
// then x), which expands to nothing: such a rule is refused, and a rule
// that maps a subject to nothing fails it rather than give every client
// the same empty principal.
func TestRulesNeverEmpty(t *testing.T) {
	if _, err := ParseRules(`RULE:^CN=([^,]*),.*$/$1_svc/`); err == nil || !strings.Contains(err.Error(), "${1}_svc") {
		t.Fatalf("a $1_svc replacement: %v, want a refusal suggesting ${1}_svc", err)
	}
	r, err := ParseRules(`RULE:^CN=([^,]*),.*$/${1}_svc/`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Apply("CN=alice,O=acme"); err != nil || got != "alice_svc" {
		t.Fatalf("${1}_svc: %q, %v", got, err)
	}
	r, err = ParseRules(`RULE:^CN=([^,]*)$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Apply("CN="); !errors.Is(err, ErrNoRule) {
		t.Fatalf("a subject mapped to nothing: %q, %v; want ErrNoRule", got, err)
	}
}
