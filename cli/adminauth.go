package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// The admin API subcommands (brokerd processor ..., brokerd cluster
// members/add/remove/transfer) reach the admin HTTP API with the client
// TLS flags (--tls, --tls-ca, --tls-cert, --tls-key: https, and a client
// certificate) and HTTP Basic credentials from --user and --password.
//
// --user and --password are registered here only when the flag set does
// not have them yet, and read by name: once the Kafka client flags carry
// flags of the same names (SASL), both uses share them.

// addAdminAuthFlags registers --user and --password on fs unless present.
func addAdminAuthFlags(fs *pflag.FlagSet) {
	if fs.Lookup("user") == nil {
		fs.String("user", "", "user name for the admin API's HTTP Basic authentication (a SCRAM user); also $BROKERD_USER")
	}
	if fs.Lookup("password") == nil {
		fs.String("password", "", "password of --user; default $BROKERD_PASSWORD (safer than the command line)")
	}
}

// adminCredentials are the --user and --password values, else
// $BROKERD_USER and $BROKERD_PASSWORD (as the Kafka client flags read them).
func adminCredentials(fs *pflag.FlagSet) (user, password string, err error) {
	if f := fs.Lookup("user"); f != nil {
		user = f.Value.String()
	}
	if f := fs.Lookup("password"); f != nil {
		password = f.Value.String()
	}
	if user == "" {
		user = os.Getenv("BROKERD_USER")
	}
	if password == "" {
		password = os.Getenv("BROKERD_PASSWORD")
	}
	if password != "" && user == "" {
		return "", "", fmt.Errorf("--password needs --user")
	}
	if user != "" && password == "" {
		return "", "", fmt.Errorf("--user %s needs --password (or $BROKERD_PASSWORD)", user)
	}
	return user, password, nil
}

// adminHTTP is the base URL and HTTP client for the admin address addr:
// https when the TLS flags ask for TLS, with Basic credentials when given.
func adminHTTP(fs *pflag.FlagSet, tf *tlsFlags, addr string) (string, *http.Client, error) {
	cfg, err := tf.config()
	if err != nil {
		return "", nil, err
	}
	user, password, err := adminCredentials(fs)
	if err != nil {
		return "", nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	base := addr
	if cfg != nil {
		if strings.HasPrefix(strings.ToLower(addr), "http://") {
			return "", nil, fmt.Errorf("--admin %s is plaintext http, but the TLS flags ask for TLS: use https:// (or drop the TLS flags)", addr)
		}
		tr.TLSClientConfig = cfg
		if !strings.Contains(addr, "://") {
			base = "https://" + addr
		}
	}
	var rt http.RoundTripper = tr
	if user != "" {
		rt = basicAuth{user: user, password: password, origin: originOf(base), next: tr}
	}
	return base, &http.Client{Transport: rt}, nil
}

// basicAuth sets HTTP Basic credentials on each request to origin (the
// --admin address's scheme and host), and on no other: not on a redirect
// to another host, nor from https down to http.
type basicAuth struct {
	user, password string
	origin         string
	next           http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if originOf(r.URL.String()) != b.origin {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}

// originOf is a URL's scheme and host, lower case ("http" for an address
// without a scheme, as the admin subcommands dial it).
func originOf(raw string) string {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
