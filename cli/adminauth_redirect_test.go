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

// TestAdminBasicNotOnRedirects: the admin client's Basic credentials go to
// the --admin host only: not to the plaintext host a response redirects
// to; and --admin http:// with the TLS flags is refused.
func TestAdminBasicNotOnRedirects(t *testing.T) {
	var got string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
	}))
	defer evil.Close()
	ca := tlstest.NewCA(t, t.TempDir())
	srvPair := ca.Server("admin", "admin")
	var first string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first = r.Header.Get("Authorization")
		http.Redirect(w, r, evil.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvPair.TLS}}
	srv.StartTLS()
	defer srv.Close()
	flags := func(args ...string) (*pflag.FlagSet, *tlsFlags) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addAdminAuthFlags(fs)
		tf := addTLSFlags(fs)
		if err := fs.Parse(append([]string{"--user", "bob", "--password", "s3cret", "--tls-ca", ca.CAFile}, args...)); err != nil {
			t.Fatal(err)
		}
		return fs, tf
	}
	fs, tf := flags()
	base, hc, err := adminHTTP(fs, tf, strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(base + "/v1/processors")
	if err == nil {
		resp.Body.Close()
	}
	if first == "" {
		t.Fatal("no credentials sent to the --admin host")
	}
	if got != "" {
		t.Fatalf("Basic credentials sent to the redirect target %s", evil.URL)
	}
	fs, tf = flags()
	if _, _, err := adminHTTP(fs, tf, "http://127.0.0.1:9644"); err == nil {
		t.Fatal("--admin http:// with TLS flags accepted")
	}
}
