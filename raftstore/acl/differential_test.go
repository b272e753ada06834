package acl

import (
	"slices"
	"strings"
	"testing"
)

// The reference authorizer: Kafka's rules written as plainly as
// possible, with no index, for FuzzDifferential to hold the Index to.

func refCovers(b Binding, typ ResourceType, name string) bool {
	if b.ResourceType != typ {
		return false
	}
	if b.PatternType == PatternLiteral {
		return b.ResourceName == name || b.ResourceName == WildcardResource
	}
	return strings.HasPrefix(name, b.ResourceName)
}

func refApplies(b Binding, req Request) bool {
	return (b.Principal == req.Principal || b.Principal == WildcardPrincipal) && (b.Host == req.Host || b.Host == WildcardHost)
}

func refImplies(have, want Operation) bool {
	if have == OpAll || have == want {
		return true
	}
	if want == OpDescribe {
		return slices.Contains([]Operation{OpRead, OpWrite, OpDelete, OpAlter}, have)
	}
	return want == OpDescribeConfigs && have == OpAlterConfigs
}

func refAuthorize(all []Binding, p *Policy, req Request, op Operation, typ ResourceType, name string) bool {
	if p.SuperUsers[req.Principal] {
		return true
	}
	var found, allowed bool
	for _, b := range all {
		if !refCovers(b, typ, name) {
			continue
		}
		found = true
		if !refApplies(b, req) {
			continue
		}
		if b.Permission == PermDeny && (b.Operation == op || b.Operation == OpAll) {
			return false
		}
		if b.Permission == PermAllow && refImplies(b.Operation, op) {
			allowed = true
		}
	}
	if !found {
		return p.AllowIfNoACLFound
	}
	return allowed
}

// refAuthorizeAny is Kafka's Authorizer.authorizeByResourceType, as the
// Java reads.
func refAuthorizeAny(all []Binding, p *Policy, req Request, op Operation, typ ResourceType) bool {
	if refAuthorize(all, p, req, op, typ, "hardcode") {
		return true
	}
	denyLit, denyPre := map[string]bool{}, map[string]bool{}
	var allowLit, allowPre []string
	wildcardAllow := false
	for _, b := range all {
		if b.ResourceType != typ || !refApplies(b, req) || (b.Operation != op && b.Operation != OpAll) {
			continue
		}
		if b.Permission == PermDeny {
			if b.PatternType == PatternLiteral {
				if b.ResourceName == WildcardResource {
					return false
				}
				denyLit[b.ResourceName] = true
			} else {
				denyPre[b.ResourceName] = true
			}
			continue
		}
		if b.PatternType == PatternLiteral {
			if b.ResourceName == WildcardResource {
				wildcardAllow = true // a wildcard deny, later, still wins
				continue
			}
			allowLit = append(allowLit, b.ResourceName)
		} else {
			allowPre = append(allowPre, b.ResourceName)
		}
	}
	if wildcardAllow {
		return true
	}
	dominated := func(s string) bool {
		for i := 1; i <= len(s); i++ {
			if denyPre[s[:i]] {
				return true
			}
		}
		return false
	}
	for _, s := range allowLit {
		if !denyLit[s] && !dominated(s) {
			return true
		}
	}
	for _, s := range allowPre {
		if !dominated(s) {
			return true
		}
	}
	return false
}

func refMatches(f Filter, b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		if f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	case PatternMatch:
		if f.ResourceName != nil && !refCovers(b, b.ResourceType, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	}
	return (f.Principal == nil || *f.Principal == b.Principal) && (f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) && (f.Permission == PermAny || f.Permission == b.Permission)
}

// Small alphabets, so that fuzzed bindings collide, nest and deny each
// other often.
var (
	fzNames      = []string{"a", "ab", "abc", "b", "*", "hardcode", "hard"}
	fzPrincipals = []string{"User:bob", "User:carol", WildcardPrincipal}
	fzHosts      = []string{WildcardHost, "10.0.0.1", "10.0.0.2"}
	fzTypes      = []ResourceType{ResourceTopic, ResourceGroup, ResourceTransactionalID}
	fzOps        = []Operation{OpAll, OpRead, OpWrite, OpDelete, OpAlter, OpDescribe, OpCreate, OpDescribeConfigs, OpAlterConfigs}
)

func pick[T any](xs []T, b byte) T { return xs[int(b)%len(xs)] }

// fuzzBindings decodes 6 bytes a binding; duplicates are dropped (an
// Index holds distinct bindings).
func fuzzBindings(data []byte) []Binding {
	seen := map[string]bool{}
	var out []Binding
	for ; len(data) >= 6; data = data[6:] {
		b := Binding{ResourceType: pick(fzTypes, data[0]), ResourceName: pick(fzNames, data[1]), PatternType: PatternLiteral,
			Principal: pick(fzPrincipals, data[2]), Host: pick(fzHosts, data[3]), Operation: pick(fzOps, data[4]), Permission: PermAllow}
		if data[5]&1 != 0 {
			b.PatternType = PatternPrefixed
		}
		if data[5]&2 != 0 {
			b.Permission = PermDeny
		}
		if k := b.Key(); !seen[k] {
			seen[k] = true
			out = append(out, b)
		}
	}
	return out
}

// FuzzDifferential holds Index.Authorize, Index.AuthorizeAny and
// Index.Bindings (indexed filter lookups) to the reference above.
func FuzzDifferential(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 2, 2}, byte(0), byte(0), byte(2), byte(0), byte(1), byte(0))
	f.Add([]byte{0, 4, 2, 0, 0, 2, 0, 0, 0, 0, 2, 1}, byte(1), byte(1), byte(1), byte(0), byte(0), byte(7))
	f.Add([]byte{0, 6, 1, 0, 1, 0}, byte(1), byte(0), byte(2), byte(0), byte(5), byte(2))
	// allow.everyone.if.no.acl.found with carol's ACL on another topic.
	f.Add([]byte{0, 0, 1, 0, 1, 0}, byte(0), byte(0), byte(1), byte(0), byte(3), byte(1))
	// An allow of All on * before a deny of Write on *: denied.
	f.Add([]byte{0, 4, 0, 0, 0, 0, 0, 4, 0, 0, 2, 2}, byte(0), byte(0), byte(1), byte(0), byte(0), byte(0))
	f.Fuzz(func(t *testing.T, data []byte, who, host, op, typ, name, flags byte) {
		all := fuzzBindings(data)
		x := NewIndex(all)
		p := &Policy{AllowIfNoACLFound: flags&1 != 0, SuperUsers: map[string]bool{}}
		if flags&2 != 0 {
			p.SuperUsers["User:carol"] = true
		}
		req := Request{Principal: pick(fzPrincipals[:2], who), Host: pick(fzHosts[1:], host)}
		o, ty, n := pick(fzOps[1:], op), pick(fzTypes, typ), pick(fzNames, name)
		if got, want := x.Authorize(p, req, o, ty, n), refAuthorize(all, p, req, o, ty, n); got != want {
			t.Fatalf("Authorize(%+v, %s, %s %q) = %v, reference %v; bindings %+v", req, o, ty, n, got, want, all)
		}
		if got, want := x.AuthorizeAny(p, req, o, ty), refAuthorizeAny(all, p, req, o, ty); got != want {
			t.Fatalf("AuthorizeAny(%+v, %s, %s) = %v, reference %v; bindings %+v", req, o, ty, got, want, all)
		}
		flt := Filter{ResourceType: ResourceAny, PatternType: []PatternType{PatternAny, PatternMatch, PatternLiteral, PatternPrefixed}[flags>>2&3],
			Operation: OpAny, Permission: PermAny}
		if flags&16 != 0 {
			flt.ResourceName = &n
		}
		if flags&32 != 0 {
			flt.ResourceType = ty
		}
		if flags&64 != 0 {
			flt.Principal = &req.Principal
		}
		if flags&128 != 0 {
			flt.Operation = o
		}
		var want []Binding
		for _, b := range x.All() {
			if refMatches(flt, b) {
				want = append(want, b)
			}
			if flt.Matches(b) != refMatches(flt, b) {
				t.Fatalf("Matches(%+v) of %+v = %v", flt, b, flt.Matches(b))
			}
		}
		if got := x.Bindings(flt); !slices.Equal(got, want) {
			t.Fatalf("Bindings(%+v) = %+v, reference %+v", flt, got, want)
		}
	})
}
