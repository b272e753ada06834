package acl

// Request is who asks: a principal (User:name) from a host (an IP
// address as text).
type Request struct {
	Principal string
	Host      string
}

// Policy is the authorizer's local configuration: super.users and
// allow.everyone.if.no.acl.found.
type Policy struct {
	SuperUsers        map[string]bool
	AllowIfNoACLFound bool
}

// Authorize reports whether req may perform op on the resource (typ,
// name), with Kafka's rules: a super user may do anything; a matching deny
// wins over any allow; an allow of Read, Write, Delete or Alter also
// allows Describe, and of AlterConfigs also DescribeConfigs (implications
// apply to allows only); All matches every operation; with no binding on
// the resource at all, the policy's AllowIfNoACLFound decides.
//
// It allocates nothing: it sits on every request.
func (x *Index) Authorize(p *Policy, req Request, op Operation, typ ResourceType, name string) bool {
	if p.SuperUsers[req.Principal] {
		return true
	}
	if x == nil || x.byType[typ] == 0 {
		return p.AllowIfNoACLFound
	}
	s := x.verdictOn(req, op, typ, name, false)
	switch {
	case s.denied:
		return false
	case s.allowed:
		return true
	case !s.found:
		return p.AllowIfNoACLFound
	}
	return false
}

// AuthorizeNamed is Authorize for a grant that must name req's principal:
// only a super user or an allow binding of that very principal grants op
// (a User:* allow does not), and no binding is no grant, whatever
// AllowIfNoACLFound says. Denies apply as in Authorize. It is how a node
// is told from any caller (to believe what it forwards).
func (x *Index) AuthorizeNamed(p *Policy, req Request, op Operation, typ ResourceType, name string) bool {
	if req.Principal == WildcardPrincipal {
		return false
	}
	if p.SuperUsers[req.Principal] {
		return true
	}
	if x == nil || x.byType[typ] == 0 {
		return false
	}
	s := x.verdictOn(req, op, typ, name, true)
	return s.allowed && !s.denied
}

// verdictOn scans the bindings that cover the resource (typ, name);
// named ignores allows of the wildcard principal.
func (x *Index) verdictOn(req Request, op Operation, typ ResourceType, name string, named bool) verdict {
	s := verdict{named: named}
	s.scan(x.literal[resource{typ, name}], req, op)
	if name != WildcardResource {
		s.scan(x.literal[resource{typ, WildcardResource}], req, op)
	}
	for _, n := range x.prefixLens[typ] {
		if n > len(name) {
			break
		}
		s.scan(x.prefixed[resource{typ, name[:n]}], req, op)
	}
	return s
}

// verdict accumulates the bindings that apply to one resource.
type verdict struct {
	found, allowed, denied bool
	// named: an allow of the wildcard principal does not count.
	named bool
}

func (s *verdict) scan(bs []Binding, req Request, op Operation) {
	for i := range bs {
		b := &bs[i]
		s.found = true
		if !b.appliesTo(req) {
			continue
		}
		if b.Permission == PermDeny {
			if b.Operation == OpAll || b.Operation == op {
				s.denied = true
			}
			continue
		}
		if grants(b.Operation, op) && (!s.named || b.Principal != WildcardPrincipal) {
			s.allowed = true
		}
	}
}

// appliesTo reports whether the binding's principal and host cover req.
func (b *Binding) appliesTo(req Request) bool {
	if b.Principal != req.Principal && b.Principal != WildcardPrincipal {
		return false
	}
	return b.Host == WildcardHost || b.Host == req.Host
}

// grants reports whether an allow of have allows want.
func grants(have, want Operation) bool {
	if have == OpAll || have == want {
		return true
	}
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether req may perform op on at least one
// resource of type typ: Kafka's Authorizer.authorizeByResourceType, which
// InitProducerId uses for idempotent producers, step by step. First a
// made-up literal name is authorized as any resource would be (so a super
// user may, and with allow.everyone.if.no.acl.found so may anyone when no
// binding covers that name). Otherwise, among the bindings of the type
// that cover req's principal and host and op exactly or All: a deny of
// the literal wildcard forbids it; an allow of the literal wildcard
// allows it; and so does any other allowed pattern that no deny
// dominates: for a literal allow, no literal deny of the same name; for
// either, no prefixed deny of a prefix of its name.
func (x *Index) AuthorizeAny(p *Policy, req Request, op Operation, typ ResourceType) bool {
	if x.Authorize(p, req, op, typ, madeUpResource) {
		return true
	}
	if x == nil {
		return false
	}
	var allowLiteral, allowPrefixed, denyLiteral, denyPrefixed map[string]bool
	add := func(m *map[string]bool, name string) {
		if *m == nil {
			*m = map[string]bool{}
		}
		(*m)[name] = true
	}
	wildcardAllow := false
	for i := range x.all {
		b := &x.all[i]
		if b.ResourceType != typ || !b.appliesTo(req) || b.Operation != op && b.Operation != OpAll {
			continue
		}
		literal := b.PatternType == PatternLiteral
		switch {
		case b.Permission == PermDeny && literal && b.ResourceName == WildcardResource:
			return false
		case b.Permission == PermDeny && literal:
			add(&denyLiteral, b.ResourceName)
		case b.Permission == PermDeny:
			add(&denyPrefixed, b.ResourceName)
		case literal && b.ResourceName == WildcardResource:
			wildcardAllow = true
		case literal:
			add(&allowLiteral, b.ResourceName)
		default:
			add(&allowPrefixed, b.ResourceName)
		}
	}
	if wildcardAllow {
		return true
	}
	dominated := func(name string) bool {
		for n := 1; n <= len(name); n++ {
			if denyPrefixed[name[:n]] {
				return true
			}
		}
		return false
	}
	for name := range allowLiteral {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for name := range allowPrefixed {
		if !dominated(name) {
			return true
		}
	}
	return false
}

// madeUpResource is the name Kafka's authorizeByResourceType authorizes
// first ("hardcode").
const madeUpResource = "hardcode"

// Describable lists the operations req may perform on a resource, as the
// bitfield Kafka's "authorized operations" fields carry (bit n for
// operation n), out of ops.
func (x *Index) Describable(p *Policy, req Request, typ ResourceType, name string, ops []Operation) int32 {
	var bits int32
	for _, op := range ops {
		if x.Authorize(p, req, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}
