package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/brokerd/brokerd/broker/sasl"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// With brokerd.authorizer.enabled the admin API authenticates every
// request but /healthz and /readyz, with HTTP Basic (a SCRAM user's
// password) or a client certificate, and authorizes it against the
// replicated ACLs as a Kafka request would be (adminNeeds).

// Headers a node sets when it forwards a request to the leader: the
// principal it authenticated, and the client's address. The leader
// believes them only from a node: a caller whose client certificate's
// principal is a super user or is named by an allow of ClusterAction on
// the cluster (a User:* allow, or allow.everyone.if.no.acl.found, does
// not make a node), as Kafka believes the principal of an
// EnvelopeRequest. A request with these headers from anyone else is
// answered 401, never served as its sender (a confused deputy).
const (
	principalHeader = "X-Brokerd-Principal"
	hostHeader      = "X-Brokerd-Host"
)

// basicChallenge is the WWW-Authenticate of a 401.
const basicChallenge = `Basic realm="brokerd admin", charset="UTF-8"`

// adminAuth authenticates and authorizes admin requests.
type adminAuth struct {
	policy *acl.Policy
	acls   func() *acl.Index
	lookup sasl.Lookup
	// certs maps client certificates to principals
	// (ssl.principal.mapping.rules); nil without admin TLS.
	certs  *tlsconf.Server
	delay  time.Duration // before a 401 for bad credentials
	logger *slog.Logger
}

// caller is who sent a request, as authenticated.
type caller struct {
	principal, host string
}

type callerKey struct{}

// callerOf is the request's authenticated caller, if any.
func callerOf(ctx context.Context) (caller, bool) {
	c, ok := ctx.Value(callerKey{}).(caller)
	return c, ok
}

// errNoCredentials: the request carries neither Basic credentials nor a
// client certificate; it is User:ANONYMOUS, served only what the ACLs
// grant that principal, else answered 401.
var errNoCredentials = errors.New("no credentials: send HTTP Basic credentials of a SCRAM user, or a client certificate")

// authenticate finds the request's caller. A forwarding node's headers
// count when its certificate's principal has ClusterAction on the
// cluster; then Basic credentials; then the client certificate.
func (a *adminAuth) authenticate(r *http.Request) (caller, error) {
	host := hostOfRemote(r.RemoteAddr)
	certP := ""
	if a.certs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		p, err := a.certs.Principal(r.TLS)
		if err != nil {
			return caller{}, err
		}
		certP = p
	}
	if fwd := r.Header.Get(principalHeader); fwd != "" || r.Header.Get(hostHeader) != "" {
		if certP == "" || fwd == "" || !a.isNode(certP, host) {
			return caller{}, errUntrustedForwarder
		}
		fh := r.Header.Get(hostHeader)
		if fh == "" {
			fh = host
		}
		return caller{principal: fwd, host: fh}, nil
	}
	if user, pass, ok := r.BasicAuth(); ok {
		if err := sasl.VerifyPassword(a.lookup, user, pass); err != nil {
			return caller{}, err
		}
		return caller{principal: "User:" + user, host: host}, nil
	}
	if certP != "" {
		return caller{principal: certP, host: host}, nil
	}
	return caller{principal: tlsconf.Anonymous, host: host}, errNoCredentials
}

// errUntrustedForwarder: a request carries the forwarding headers but
// does not come from a node.
var errUntrustedForwarder = errors.New(principalHeader + " and " + hostHeader + " are believed only from a node's client certificate")

// isNode reports whether a client certificate's principal is a node's,
// for believing what it forwards: a super user, or named by an allow of
// ClusterAction on the cluster.
func (a *adminAuth) isNode(principal, host string) bool {
	return a.acls().AuthorizeNamed(a.policy, acl.Request{Principal: principal, Host: host}, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName)
}

// allowed reports whether c may perform op on a resource.
func (a *adminAuth) allowed(c caller, op acl.Operation, typ acl.ResourceType, name string) bool {
	return a.acls().Authorize(a.policy, acl.Request{Principal: c.principal, Host: c.host}, op, typ, name)
}

// guard puts authentication and authorization by nd in front of h, the
// handler of one route (so the request's path values are set when nd
// looks at them).
func (a *adminAuth) guard(nd adminNeed, h http.Handler) http.Handler {
	if nd.open {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.authenticate(r)
		if errors.Is(err, errNoCredentials) && nd.check(a, c, r) {
			// What the ACLs grant User:ANONYMOUS needs no credentials,
			// as on a plaintext Kafka listener.
			err = nil
		}
		if err != nil {
			if !errors.Is(err, errNoCredentials) {
				// Bad credentials: answered after a delay, as a failed
				// SASL authentication is. The password is not logged.
				a.logger.Info("admin API authentication failed", "remote", r.RemoteAddr, "path", r.URL.Path, "err", err)
				select {
				case <-time.After(a.delay):
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("WWW-Authenticate", basicChallenge)
			httpError(w, http.StatusUnauthorized, errors.New("authentication required: "+authMessage(err)))
			return
		}
		if !nd.check(a, c, r) {
			a.logger.Info("admin API request refused", "principal", c.principal, "host", c.host, "method", r.Method, "path", r.URL.Path)
			httpError(w, http.StatusForbidden, errors.New(c.principal+" is not authorized: "+nd.what))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// guardedMux registers each route behind its need of the admin table;
// with the authorizer off (auth nil) it is the plain mux.
type guardedMux struct {
	*http.ServeMux
	auth  *adminAuth
	needs func(pattern string) adminNeed
}

// Handle registers h for pattern behind the pattern's need.
func (g guardedMux) Handle(pattern string, h http.Handler) {
	if g.auth != nil {
		h = g.auth.guard(g.needs(pattern), h)
	}
	g.ServeMux.Handle(pattern, h)
}

// HandleFunc is Handle for a function.
func (g guardedMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	g.Handle(pattern, http.HandlerFunc(h))
}

// authMessage is what a 401 says: not why a password did not match.
func authMessage(err error) string {
	if errors.Is(err, errNoCredentials) || errors.Is(err, errUntrustedForwarder) {
		return err.Error()
	}
	return "invalid credentials"
}

// hostOfRemote is the IP address of an http.Request's RemoteAddr.
func hostOfRemote(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// newAdminAuth is the admin API's authenticator with the authorizer on,
// nil with it off (every request is served, as before).
func (n *Node) newAdminAuth() *adminAuth {
	if !n.cfg.Authorizer.Enabled {
		return nil
	}
	delay := n.cfg.Wire.FailedAuthDelay
	switch {
	case delay == 0:
		delay = wire.DefaultFailedAuthDelay
	case delay < 0:
		delay = 0
	}
	return &adminAuth{policy: n.cfg.Authorizer.Policy(), acls: n.store.ACLs, lookup: n.scramLookup,
		certs: n.adminTLS, delay: delay, logger: n.logger.With("component", "admin")}
}
