package acl

import "testing"

// TestAuthorizeNamed: only a super user or an allow naming the principal
// grants; User:* allows and AllowIfNoACLFound do not; denies apply.
func TestAuthorizeNamed(t *testing.T) {
	b := func(principal string, perm Permission) Binding {
		return Binding{ResourceType: ResourceCluster, ResourceName: ClusterName, PatternType: PatternLiteral,
			Principal: principal, Host: "*", Operation: OpClusterAction, Permission: perm}
	}
	p := &Policy{SuperUsers: map[string]bool{"User:root": true}, AllowIfNoACLFound: true}
	req := func(pr string) Request { return Request{Principal: pr, Host: "10.0.0.1"} }
	if NewIndex(nil).AuthorizeNamed(p, req("User:eve"), OpClusterAction, ResourceCluster, ClusterName) {
		t.Error("no ACL at all grants with AllowIfNoACLFound")
	}
	x := NewIndex([]Binding{b(WildcardPrincipal, PermAllow), b("User:node", PermAllow), b("User:bad", PermAllow), b("User:bad", PermDeny)})
	for pr, want := range map[string]bool{"User:eve": false, "User:node": true, "User:root": true, "User:bad": false, WildcardPrincipal: false} {
		if got := x.AuthorizeNamed(p, req(pr), OpClusterAction, ResourceCluster, ClusterName); got != want {
			t.Errorf("%s: %v, want %v", pr, got, want)
		}
	}
	if !x.Authorize(p, req("User:eve"), OpClusterAction, ResourceCluster, ClusterName) {
		t.Error("Authorize no longer honours User:*")
	}
}
