package acl

import "testing"

func allow(typ ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	return Binding{ResourceType: typ, ResourceName: name, PatternType: pt, Principal: principal, Host: WildcardHost, Operation: op, Permission: PermAllow}
}

func deny(typ ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	b := allow(typ, name, pt, principal, op)
	b.Permission = PermDeny
	return b
}

func TestAuthorize(t *testing.T) {
	bob := Request{Principal: "User:bob", Host: "10.0.0.1"}
	alice := Request{Principal: "User:alice", Host: "10.0.0.2"}
	strict := &Policy{SuperUsers: map[string]bool{"User:admin": true}}
	open := &Policy{AllowIfNoACLFound: true}
	hostOnly := allow(ResourceTopic, "h", PatternLiteral, "User:bob", OpRead)
	hostOnly.Host = "10.0.0.9"
	tests := []struct {
		name     string
		bindings []Binding
		policy   *Policy
		req      Request
		op       Operation
		typ      ResourceType
		res      string
		want     bool
	}{
		{"no acls, strict", nil, strict, bob, OpRead, ResourceTopic, "orders", false},
		{"no acls, allow everyone", nil, open, bob, OpRead, ResourceTopic, "orders", true},
		{"super user", nil, strict, Request{Principal: "User:admin", Host: "1.1.1.1"}, OpAlter, ResourceCluster, ClusterName, true},
		{"literal allow", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpRead, ResourceTopic, "orders", true},
		{"literal other name", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpRead, ResourceTopic, "orders2", false},
		{"literal other principal", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, alice, OpRead, ResourceTopic, "orders", false},
		{"literal other op", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpWrite, ResourceTopic, "orders", false},
		{"other type", []Binding{allow(ResourceGroup, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpRead, ResourceTopic, "orders", false},
		{"prefixed allow", []Binding{allow(ResourceTopic, "ord", PatternPrefixed, "User:bob", OpWrite)}, strict, bob, OpWrite, ResourceTopic, "orders", true},
		{"prefixed whole name", []Binding{allow(ResourceTopic, "orders", PatternPrefixed, "User:bob", OpWrite)}, strict, bob, OpWrite, ResourceTopic, "orders", true},
		{"prefixed longer than name", []Binding{allow(ResourceTopic, "orders-x", PatternPrefixed, "User:bob", OpWrite)}, strict, bob, OpWrite, ResourceTopic, "orders", false},
		{"prefix star is not wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, "User:bob", OpWrite)}, strict, bob, OpWrite, ResourceTopic, "orders", false},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpRead, ResourceTopic, "anything", true},
		{"wildcard principal", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:*", OpRead)}, strict, alice, OpRead, ResourceTopic, "orders", true},
		{"host mismatch", []Binding{hostOnly}, strict, bob, OpRead, ResourceTopic, "h", false},
		{"deny wins over allow", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead), deny(ResourceTopic, "ord", PatternPrefixed, "User:bob", OpRead)}, strict, bob, OpRead, ResourceTopic, "orders", false},
		{"deny wildcard principal wins", []Binding{allow(ResourceTopic, "*", PatternLiteral, "User:bob", OpAll), deny(ResourceTopic, "orders", PatternLiteral, "User:*", OpWrite)}, strict, bob, OpWrite, ResourceTopic, "orders", false},
		{"deny other op does not deny", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead), deny(ResourceTopic, "orders", PatternLiteral, "User:bob", OpWrite)}, strict, bob, OpRead, ResourceTopic, "orders", true},
		{"deny read does not deny describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpDescribe), deny(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpDescribe, ResourceTopic, "orders", true},
		{"deny all denies everything", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead), deny(ResourceTopic, "orders", PatternLiteral, "User:bob", OpAll)}, strict, bob, OpRead, ResourceTopic, "orders", false},
		{"deny beats super user? no", []Binding{deny(ResourceCluster, ClusterName, PatternLiteral, "User:admin", OpAll)}, strict, Request{Principal: "User:admin"}, OpAlter, ResourceCluster, ClusterName, true},
		{"read implies describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)}, strict, bob, OpDescribe, ResourceTopic, "orders", true},
		{"write implies describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpWrite)}, strict, bob, OpDescribe, ResourceTopic, "orders", true},
		{"delete implies describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpDelete)}, strict, bob, OpDescribe, ResourceTopic, "orders", true},
		{"alter implies describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpAlter)}, strict, bob, OpDescribe, ResourceTopic, "orders", true},
		{"create does not imply describe", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpCreate)}, strict, bob, OpDescribe, ResourceTopic, "orders", false},
		{"alterconfigs implies describeconfigs", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpAlterConfigs)}, strict, bob, OpDescribeConfigs, ResourceTopic, "orders", true},
		{"describe implies nothing", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpDescribe)}, strict, bob, OpRead, ResourceTopic, "orders", false},
		{"all matches everything", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpAll)}, strict, bob, OpDelete, ResourceTopic, "orders", true},
		{"allow everyone: acl on resource for other principal", []Binding{allow(ResourceTopic, "orders", PatternLiteral, "User:alice", OpRead)}, open, bob, OpRead, ResourceTopic, "orders", false},
		{"allow everyone: acl on other resource", []Binding{allow(ResourceTopic, "other", PatternLiteral, "User:alice", OpRead)}, open, bob, OpRead, ResourceTopic, "orders", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(tc.bindings)
			if got := x.Authorize(tc.policy, tc.req, tc.op, tc.typ, tc.res); got != tc.want {
				t.Fatalf("Authorize(%s %s %s/%s) = %v, want %v", tc.req.Principal, tc.op, tc.typ, tc.res, got, tc.want)
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	bob := Request{Principal: "User:bob", Host: "h"}
	strict := &Policy{}
	open := &Policy{AllowIfNoACLFound: true}
	super := &Policy{SuperUsers: map[string]bool{"User:bob": true}}
	tests := []struct {
		name     string
		bindings []Binding
		want     bool
		policy   *Policy
	}{
		{"none", nil, false, nil},
		// Kafka authorizes the made-up name "hardcode" first.
		{"allow everyone, no ACL at all", nil, true, open},
		{"allow everyone, another principal's ACL on another topic", []Binding{allow(ResourceTopic, "carol-only", PatternLiteral, "User:carol", OpRead)}, true, open},
		{"allow everyone, an ACL covers every name", []Binding{allow(ResourceTopic, "*", PatternLiteral, "User:carol", OpRead)}, false, open},
		{"allow everyone, a wildcard deny", []Binding{deny(ResourceTopic, "*", PatternLiteral, "User:bob", OpWrite)}, false, open},
		{"super user despite a deny", []Binding{deny(ResourceTopic, "*", PatternLiteral, "User:bob", OpAll)}, true, super},
		{"all allows write", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", OpAll)}, true, nil},
		{"wildcard allow despite literal deny", []Binding{allow(ResourceTopic, "*", PatternLiteral, "User:*", OpWrite), deny(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite)}, true, nil},
		{"literal allow, literal deny of another name", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite), deny(ResourceTopic, "u", PatternLiteral, "User:bob", OpWrite)}, true, nil},
		{"prefixed allow, literal deny of the same name", []Binding{allow(ResourceTopic, "t", PatternPrefixed, "User:bob", OpWrite), deny(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite)}, true, nil},
		{"literal allow under a denied prefix", []Binding{allow(ResourceTopic, "team.x", PatternLiteral, "User:bob", OpWrite), deny(ResourceTopic, "team.", PatternPrefixed, "User:*", OpWrite)}, false, nil},
		{"allow from another host", []Binding{{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: "User:bob", Host: "10.9.9.9", Operation: OpWrite, Permission: PermAllow}}, false, nil},
		{"a literal write", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite)}, true, nil},
		{"a prefixed write", []Binding{allow(ResourceTopic, "t", PatternPrefixed, "User:bob", OpWrite)}, true, nil},
		{"read only", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", OpRead)}, false, nil},
		{"denied literal", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite), deny(ResourceTopic, "t", PatternLiteral, "User:bob", OpWrite)}, false, nil},
		{"denied wildcard", []Binding{allow(ResourceTopic, "t", PatternPrefixed, "User:bob", OpWrite), deny(ResourceTopic, "*", PatternLiteral, "User:*", OpWrite)}, false, nil},
		{"denied by shorter prefix", []Binding{allow(ResourceTopic, "tx", PatternPrefixed, "User:bob", OpWrite), deny(ResourceTopic, "t", PatternPrefixed, "User:bob", OpAll)}, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			if p == nil {
				p = strict
			}
			if got := NewIndex(tc.bindings).AuthorizeAny(p, bob, OpWrite, ResourceTopic); got != tc.want {
				t.Fatalf("AuthorizeAny = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)
	star := allow(ResourceTopic, "*", PatternLiteral, "User:bob", OpRead)
	pre := allow(ResourceTopic, "ord", PatternPrefixed, "User:bob", OpRead)
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}
	tests := []struct {
		name string
		f    Filter
		b    Binding
		want bool
	}{
		{"match anything", any, lit, true},
		{"type", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, lit, false},
		{"literal exact", Filter{ResourceType: ResourceTopic, ResourceName: ptr("orders"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermAny}, lit, true},
		{"literal filter, prefixed binding", Filter{ResourceType: ResourceTopic, ResourceName: ptr("ord"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermAny}, pre, false},
		{"any pattern exact name", Filter{ResourceType: ResourceTopic, ResourceName: ptr("ord"), PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, pre, true},
		{"any pattern does not expand", Filter{ResourceType: ResourceTopic, ResourceName: ptr("orders"), PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, pre, false},
		{"match: prefix applies", Filter{ResourceType: ResourceTopic, ResourceName: ptr("orders"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, pre, true},
		{"match: wildcard applies", Filter{ResourceType: ResourceTopic, ResourceName: ptr("orders"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, star, true},
		{"match: literal", Filter{ResourceType: ResourceTopic, ResourceName: ptr("orders"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, lit, true},
		{"match: other", Filter{ResourceType: ResourceTopic, ResourceName: ptr("x"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, lit, false},
		{"principal", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: ptr("User:alice"), Operation: OpAny, Permission: PermAny}, lit, false},
		{"host", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Host: ptr("*"), Operation: OpAny, Permission: PermAny}, lit, true},
		{"operation", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, Permission: PermAny}, lit, false},
		{"permission", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermDeny}, lit, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Matches(tc.b); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := allow(ResourceTopic, "orders", PatternLiteral, "User:bob", OpRead)
	bad := []func(*Binding){
		func(b *Binding) { b.ResourceType = ResourceAny },
		func(b *Binding) { b.ResourceType = ResourceDelegationToken },
		func(b *Binding) { b.PatternType = PatternMatch },
		func(b *Binding) { b.Operation = OpAny },
		func(b *Binding) { b.Permission = PermAny },
		func(b *Binding) { b.Principal = "bob" },
		func(b *Binding) { b.Host = "" },
		func(b *Binding) { b.ResourceName = "" },
		func(b *Binding) { b.ResourceType, b.ResourceName = ResourceCluster, "c" },
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, mut := range bad {
		b := ok
		mut(&b)
		if b.Validate() == nil {
			t.Errorf("case %d: %+v validated", i, b)
		}
	}
	if (Filter{ResourceType: ResourceUnknown, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}).Validate() == nil {
		t.Error("unknown resource type filter validated")
	}
}
