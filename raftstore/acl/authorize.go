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
	var s verdict
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

// verdict accumulates the bindings that apply to one resource.
type verdict struct {
	found, allowed, denied bool
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
		if grants(b.Operation, op) {
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
// resource of type typ (Kafka's authorizeByResourceType, which
// InitProducerId uses for idempotent producers): a super user may; a deny
// of op on the wildcard resource forbids it; otherwise some allow binding
// of that type must cover req and op without a deny covering the same
// pattern. With no binding of that type, AllowIfNoACLFound decides.
func (x *Index) AuthorizeAny(p *Policy, req Request, op Operation, typ ResourceType) bool {
	if p.SuperUsers[req.Principal] {
		return true
	}
	if x == nil || x.byType[typ] == 0 {
		return p.AllowIfNoACLFound
	}
	var wild verdict
	wild.scan(x.literal[resource{typ, WildcardResource}], req, op)
	if wild.denied {
		return false
	}
	for _, b := range x.all {
		if b.ResourceType != typ || b.Permission != PermAllow || !b.appliesTo(req) || !grants(b.Operation, op) {
			continue
		}
		if b.PatternType == PatternLiteral && x.Authorize(p, req, op, typ, b.ResourceName) {
			return true
		}
		if b.PatternType == PatternPrefixed && !x.prefixDenied(req, op, typ, b.ResourceName) {
			return true
		}
	}
	return false
}

// prefixDenied reports whether a deny covers every name with prefix:
// a prefixed deny on the prefix or on a shorter prefix of it.
func (x *Index) prefixDenied(req Request, op Operation, typ ResourceType, prefix string) bool {
	var s verdict
	for _, n := range x.prefixLens[typ] {
		if n > len(prefix) {
			break
		}
		s.scan(x.prefixed[resource{typ, prefix[:n]}], req, op)
	}
	return s.denied
}

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
