package node

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestForwardedPrincipalAllowEveryone: with
// allow.everyone.if.no.acl.found=true and no ACL on the cluster (topic ACLs
// only), a client certificate does not become a node: its
// X-Brokerd-Principal is refused, so it cannot read what only User:hr may.
func TestForwardedPrincipalAllowEveryone(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	srvPair := ca.Server("admin", "admin")
	certs, err := tlsconf.New(tlsconf.Config{KeystoreLocation: srvPair.Keystore, TruststoreLocation: ca.CAFile,
		ClientAuth: tlsconf.ClientAuthRequested, PrincipalRules: `RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	index := acl.NewIndex([]acl.Binding{{ResourceType: acl.ResourceTopic, ResourceName: "payroll", PatternType: acl.PatternLiteral,
		Principal: "User:hr", Host: "*", Operation: acl.OpRead, Permission: acl.PermAllow}})
	a := &adminAuth{policy: broker.AuthorizerConfig{Enabled: true, AllowEveryoneIfNoACLFound: true}.Policy(),
		acls: func() *acl.Index { return index }, certs: certs, delay: time.Millisecond,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	need := adminNeed{what: "Read on payroll", check: func(a *adminAuth, c caller, _ *http.Request) bool {
		return a.allowed(c, acl.OpRead, acl.ResourceTopic, "payroll")
	}}
	srv := httptest.NewUnstartedServer(a.guard(need, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := callerOf(r.Context())
		_, _ = io.WriteString(w, c.principal)
	})))
	srv.TLS = certs.TLSConfig()
	srv.StartTLS()
	defer srv.Close()
	eve := ca.Client("eve", pkix.Name{CommonName: "eve"})
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{eve.TLS}}}}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/processors/payroll-agg/state/k", nil)
	req.Header.Set("x-brokerd-principal", "User:hr")
	req.Header.Set("X-Brokerd-Host", "10.0.0.1")
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("eve forwarding as User:hr: %d %q, want 401", resp.StatusCode, b)
	}
}

// TestSetForwarded: a node with a client certificate forwards the
// caller's principal and not the caller's credentials; one without
// passes the credentials on.
func TestSetForwarded(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	nodeCert := ca.Node("n", "node")
	s, err := tlsconf.New(tlsconf.Config{KeystoreLocation: nodeCert.Keystore, TruststoreLocation: ca.CAFile, ClientAuth: tlsconf.ClientAuthRequested}, nil)
	if err != nil {
		t.Fatal(err)
	}
	orig := httptest.NewRequest("POST", "/v1/cluster/members", nil)
	orig.SetBasicAuth("bob", "secret")
	orig = orig.WithContext(context.WithValue(orig.Context(), callerKey{}, caller{principal: "User:bob", host: "10.0.0.2"}))
	for _, c := range []struct {
		name      string
		tls       *tlsconf.Server
		principal string
		auth      bool
	}{
		{name: "with a client certificate", tls: s, principal: "User:bob"},
		{name: "without", tls: nil, auth: true},
	} {
		req := httptest.NewRequest("POST", "/v1/cluster/members", nil)
		(&Node{adminTLS: c.tls}).setForwarded(req, orig)
		if got := req.Header.Get(principalHeader); got != c.principal {
			t.Errorf("%s: principal header %q, want %q", c.name, got, c.principal)
		}
		if got := req.Header.Get("Authorization") != ""; got != c.auth {
			t.Errorf("%s: Authorization forwarded %v, want %v", c.name, got, c.auth)
		}
	}
}
