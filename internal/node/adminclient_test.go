package node

import (
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
)

// TestAdminClientServerOnlyCert: a node's admin certificate with
// serverAuth only (a usual https certificate) is not presented as a client
// certificate, so a peer that requests client certificates still answers.
func TestAdminClientServerOnlyCert(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	p := ca.Server("n", "node")
	s, err := tlsconf.New(tlsconf.Config{KeystoreLocation: p.Keystore, TruststoreLocation: ca.CAFile, ClientAuth: tlsconf.ClientAuthRequested, Prefix: "brokerd.admin.tls."}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = s.TLSConfig()
	srv.StartTLS()
	defer srv.Close()
	resp, err := newAdminClient(s).Get(srv.URL + "/v1/cluster/brokers")
	if err != nil {
		t.Fatalf("node-to-node admin call with a serverAuth-only certificate: %v", err)
	}
	resp.Body.Close()
}

// TestAdminClientSystemRoots: without an admin trust store the nodes'
// admin calls verify the peer against the system's CAs (as documented),
// not refuse every peer for want of a trust store.
func TestAdminClientSystemRoots(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	p := ca.Node("n", "node")
	s, err := tlsconf.New(tlsconf.Config{KeystoreLocation: p.Keystore, ClientAuth: tlsconf.ClientAuthNone, Prefix: "brokerd.admin.tls."}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = s.TLSConfig()
	srv.StartTLS()
	defer srv.Close()
	_, err = newAdminClient(s).Get(srv.URL + "/v1/cluster")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a peer whose CA is not a system CA: %v, want the system roots' unknown authority", err)
	}
}
