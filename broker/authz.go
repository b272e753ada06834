package broker

import (
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// AuthorizerConfig turns ACL authorization on: Kafka's authorizer keys.
type AuthorizerConfig struct {
	// Enabled is brokerd.authorizer.enabled (default false: every
	// request is allowed, and the ACL APIs answer SECURITY_DISABLED).
	Enabled bool
	// SuperUsers is super.users: principals allowed everything.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: a
	// resource without any ACL is open to everyone.
	AllowEveryoneIfNoACLFound bool
}

// Policy is the acl.Policy c describes (the admin API authorizes with it
// too).
func (c AuthorizerConfig) Policy() *acl.Policy { return newPolicy(c) }

// newPolicy is the acl.Policy a configuration describes.
func newPolicy(c AuthorizerConfig) *acl.Policy {
	p := &acl.Policy{SuperUsers: map[string]bool{}, AllowIfNoACLFound: c.AllowEveryoneIfNoACLFound}
	for _, u := range c.SuperUsers {
		if u = strings.TrimSpace(u); u != "" {
			p.SuperUsers[u] = true
		}
	}
	return p
}

// authCtx authorizes one request: its principal and host against the
// replicated ACLs as they stood when it arrived.
type authCtx struct {
	policy *acl.Policy
	index  *acl.Index
	who    acl.Request
}

// authFor returns the request's authorizer, or nil when authorization is
// off.
func (b *Broker) authFor(req *wire.Request) *authCtx {
	if !b.cfg.Authorizer.Enabled {
		return nil
	}
	return &authCtx{policy: b.policy, index: b.store.ACLs(), who: acl.Request{Principal: principalOf(req), Host: hostOf(req.RemoteAddr)}}
}

// principalOf is the request's principal; a request without one (a test,
// a listener that records none) is User:ANONYMOUS.
func principalOf(req *wire.Request) string {
	if req.Principal == "" {
		return "User:ANONYMOUS"
	}
	return req.Principal
}

// hostOf is the client's IP address as ACL hosts name it: Kafka's form
// (Java's getHostAddress, 0:0:0:0:0:0:0:1 for ::1), which CreateAcls
// writes hosts in too.
func hostOf(addr net.Addr) string {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return acl.CanonicalIP(a.IP, a.Zone)
	case nil:
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return acl.CanonicalHost(addr.String())
	}
	return acl.CanonicalHost(host)
}

// ok reports whether the request may perform op on a resource. A nil
// authCtx (authorization off) allows everything.
func (a *authCtx) ok(op acl.Operation, typ acl.ResourceType, name string) bool {
	if a == nil {
		return true
	}
	return a.index.Authorize(a.policy, a.who, op, typ, name)
}

func (a *authCtx) topic(op acl.Operation, name string) bool {
	return a.ok(op, acl.ResourceTopic, name)
}

func (a *authCtx) group(op acl.Operation, name string) bool {
	return a.ok(op, acl.ResourceGroup, name)
}

func (a *authCtx) txn(op acl.Operation, id string) bool {
	return a.ok(op, acl.ResourceTransactionalID, id)
}

func (a *authCtx) cluster(op acl.Operation) bool {
	return a.ok(op, acl.ResourceCluster, acl.ClusterName)
}

// mayCreateTopic reports whether the request may create the topic: Create
// on the cluster or on the topic (Metadata's auto-creation).
func (a *authCtx) mayCreateTopic(name string) bool {
	return a.cluster(acl.OpCreate) || a.topic(acl.OpCreate, name)
}

// operations is the "authorized operations" bitfield of a resource, out
// of the operations Kafka reports for its type.
func (a *authCtx) operations(typ acl.ResourceType, name string, ops []acl.Operation) int32 {
	if a == nil {
		var bits int32
		for _, op := range ops {
			bits |= 1 << op
		}
		return bits
	}
	return a.index.Describable(a.policy, a.who, typ, name, ops)
}

// authorizeThenHandle runs a request's checks (apiAuth), then its handler
// on what the checks left of it, with the same authorizer (nil when off),
// then merges the refusals into the answer. An unauthorized request, or
// part of one, reaches no handler.
func (b *Broker) authorizeThenHandle(req *wire.Request, handle func(a *authCtx) (kmsg.Response, error)) (kmsg.Response, error) {
	a := b.authFor(req)
	if a == nil {
		return handle(nil)
	}
	rule, ok := apiAuth[req.Header.APIKey]
	if !ok || rule.check == nil {
		return handle(a)
	}
	denied, merge := rule.check(b, a, req.Msg)
	if denied != nil {
		return denied, nil
	}
	resp, err := handle(a)
	if err == nil && resp != nil && merge != nil {
		merge(resp)
	}
	return resp, err
}
