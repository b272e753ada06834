package node

import (
	"net/http"
	"time"

	"github.com/brokerd/brokerd/internal/tlsconf"
)

// newAdminClient is the client of this node's calls to other nodes' admin
// API: with admin TLS it speaks https, presents this node's certificate
// (its principal on the other side) and verifies theirs against the admin
// trust store (the system's CAs without one).
func newAdminClient(adminTLS *tlsconf.Server) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if adminTLS != nil {
		tr.TLSClientConfig = adminTLS.ClientTLSConfig()
	}
	return &http.Client{Transport: tr}
}

// adminClient is n.adminHTTP with a timeout.
func (n *Node) adminClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: n.adminHTTP.Transport, Timeout: timeout}
}

// adminURL is the URL of path on another node's admin address.
func (n *Node) adminURL(addr, path string) string {
	if n.adminTLS != nil {
		return "https://" + addr + path
	}
	return "http://" + addr + path
}

// setForwarded marks a request forwarded to the leader with the caller
// this node authenticated, when this node presents a client certificate
// (the leader believes the headers only from a node's certificate);
// otherwise it passes on the client's own credentials for the leader to
// check. Never both: the credentials are not sent where they are not
// needed.
func (n *Node) setForwarded(req, orig *http.Request) {
	if c, ok := callerOf(orig.Context()); ok && n.adminTLS != nil && n.adminTLS.PresentsClientCertificate() {
		req.Header.Set(principalHeader, c.principal)
		req.Header.Set(hostHeader, c.host)
		return
	}
	if a := orig.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
}
