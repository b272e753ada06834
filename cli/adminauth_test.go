package cli

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/brokerd/brokerd/internal/tlstest"
)

// TestAdminHTTP: the admin subcommands' client speaks https with the TLS
// flags and sends --user/--password as HTTP Basic credentials; --user and
// --password registered by another flag set (the Kafka client flags) are
// read by name, not registered twice.
func TestAdminHTTP(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	srvPair := ca.Server("admin", "admin")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "bob" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvPair.TLS}}
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")

	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("user", "", "registered elsewhere")
	addAdminAuthFlags(fs)
	tf := addTLSFlags(fs)
	if err := fs.Parse([]string{"--user", "bob", "--password", "s3cret", "--tls-ca", ca.CAFile}); err != nil {
		t.Fatal(err)
	}
	base, hc, err := adminHTTP(fs, tf, addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("base %q, want https", base)
	}
	resp, err := hc.Get(base + "/v1/processors")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}

	fs2 := pflag.NewFlagSet("t2", pflag.ContinueOnError)
	addAdminAuthFlags(fs2)
	tf2 := addTLSFlags(fs2)
	if err := fs2.Parse([]string{"--user", "bob"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROKERD_PASSWORD", "")
	t.Setenv("BROKERD_USER", "")
	if _, _, err := adminHTTP(fs2, tf2, addr); err == nil || !strings.Contains(err.Error(), "needs --password") {
		t.Fatalf("--user without a password: %v", err)
	}
}
