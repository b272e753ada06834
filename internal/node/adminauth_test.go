package node

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestAdminAuth runs the admin API's authentication and authorization
// over TLS with optional client certificates: Basic users checked against
// their SCRAM credentials, certificate principals mapped by
// ssl.principal.mapping.rules, the ACLs of the cluster resource, and the
// principal a forwarding node vouches for.
func TestAdminAuth(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	srvPair := ca.Server("admin", "admin")
	certs, err := tlsconf.New(tlsconf.Config{KeystoreLocation: srvPair.Keystore, TruststoreLocation: ca.CAFile,
		ClientAuth: tlsconf.ClientAuthRequested, PrincipalRules: `RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT`, Prefix: "brokerd.admin.tls."}, nil)
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]sasl.Credential{}
	for _, u := range []string{"alice", "bob", "root"} {
		c, err := sasl.NewCredential(sasl.ScramSHA512, u, u+"-secret", 4096)
		if err != nil {
			t.Fatal(err)
		}
		creds[u] = c
	}
	lookup := func(user, mech string) (sasl.Credential, bool) {
		c, ok := creds[user]
		return c, ok && mech == sasl.ScramSHA512
	}
	allow := func(principal string, op acl.Operation) acl.Binding {
		return acl.Binding{ResourceType: acl.ResourceCluster, ResourceName: acl.ClusterName, PatternType: acl.PatternLiteral,
			Principal: principal, Host: "*", Operation: op, Permission: acl.PermAllow}
	}
	index := acl.NewIndex([]acl.Binding{
		allow("User:bob", acl.OpAlter), allow("User:ops", acl.OpAlter), allow("User:node1", acl.OpClusterAction), allow("User:ANONYMOUS", acl.OpDescribe),
		allow(acl.WildcardPrincipal, acl.OpClusterAction), // does not make a node
	})
	const delay = 50 * time.Millisecond
	a := &adminAuth{policy: broker.AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:root"}}.Policy(),
		acls: func() *acl.Index { return index }, lookup: lookup, certs: certs, delay: delay, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	mux := guardedMux{ServeMux: http.NewServeMux(), auth: a, needs: (&Node{}).adminNeeds()}
	ok := func(w http.ResponseWriter, r *http.Request) {
		c, _ := callerOf(r.Context())
		w.Header().Set("X-Principal", c.principal)
	}
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("POST /v1/cluster/members", ok)
	mux.Handle("/metrics", http.HandlerFunc(ok))
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = certs.TLSConfig()
	srv.StartTLS()
	defer srv.Close()

	client := func(cert *tlstest.Pair) *http.Client {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{cert.TLS}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	ops := ca.Client("ops", pkix.Name{CommonName: "ops", Organization: []string{"acme"}})
	eve := ca.Client("eve", pkix.Name{CommonName: "eve"})
	node1 := ca.Client("node1", pkix.Name{CommonName: "node1"})
	for _, c := range []struct {
		name, method, path, user, pass string
		cert                           *tlstest.Pair
		header                         map[string]string
		want                           int
		principal                      string
		slow                           bool
	}{
		{name: "healthz open", method: "GET", path: "/healthz", want: 200},
		{name: "no credentials", method: "POST", path: "/v1/cluster/members", want: 401},
		{name: "what User:ANONYMOUS is granted", method: "GET", path: "/metrics", want: 200, principal: "User:ANONYMOUS"},
		{name: "bad password", method: "POST", path: "/v1/cluster/members", user: "bob", pass: "nope", want: 401, slow: true},
		{name: "unknown user", method: "POST", path: "/v1/cluster/members", user: "mallory", pass: "x", want: 401, slow: true},
		{name: "user without ACL", method: "POST", path: "/v1/cluster/members", user: "alice", pass: "alice-secret", want: 403},
		{name: "user with ACL", method: "POST", path: "/v1/cluster/members", user: "bob", pass: "bob-secret", want: 200, principal: "User:bob"},
		{name: "super user", method: "POST", path: "/v1/cluster/members", user: "root", pass: "root-secret", want: 200, principal: "User:root"},
		{name: "certificate with ACL", method: "POST", path: "/v1/cluster/members", cert: ops, want: 200, principal: "User:ops"},
		{name: "certificate without ACL", method: "POST", path: "/v1/cluster/members", cert: eve, want: 403},
		{name: "Basic wins over the certificate", method: "POST", path: "/v1/cluster/members", cert: eve, user: "bob", pass: "bob-secret", want: 200, principal: "User:bob"},
		{name: "forwarded by a node", method: "POST", path: "/v1/cluster/members", cert: node1, header: map[string]string{principalHeader: "User:bob"}, want: 200, principal: "User:bob"},
		{name: "forwarded by a non-node (User:* has ClusterAction) is refused", method: "POST", path: "/v1/cluster/members", cert: eve, header: map[string]string{principalHeader: "User:root"}, want: 401, slow: true},
		{name: "forwarded by a non-node is not served as it (confused deputy)", method: "POST", path: "/v1/cluster/members", cert: ops, header: map[string]string{principalHeader: "User:eve"}, want: 401, slow: true},
		{name: "a forwarded host alone is refused", method: "POST", path: "/v1/cluster/members", cert: ops, header: map[string]string{hostHeader: "10.0.0.1"}, want: 401, slow: true},
		{name: "forwarded without a certificate is refused", method: "POST", path: "/v1/cluster/members", header: map[string]string{principalHeader: "User:root"}, want: 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
			if c.user != "" {
				req.SetBasicAuth(c.user, c.pass)
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			start := time.Now()
			resp, err := client(c.cert).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.want)
			}
			if c.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
			if c.principal != "" && resp.Header.Get("X-Principal") != c.principal {
				t.Errorf("principal %q, want %q", resp.Header.Get("X-Principal"), c.principal)
			}
			if took := time.Since(start); c.slow && took < delay {
				t.Errorf("a failed authentication answered after %v, want at least %v", took, delay)
			}
		})
	}
}

// TestAdminAuthOff: with the authorizer off the routes are served as
// they were, without credentials.
func TestAdminAuthOff(t *testing.T) {
	mux := guardedMux{ServeMux: http.NewServeMux(), needs: (&Node{}).adminNeeds()}
	mux.HandleFunc("POST /v1/cluster/members", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/cluster/members", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
