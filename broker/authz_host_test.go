package broker

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestACLHostIPv6: an ACL created for host ::1 is held in Kafka's form
// and covers a client connected from ::1.
func TestACLHostIPv6(t *testing.T) {
	b := authzBroker(t)
	r := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "::1", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	r.Creations = append(r.Creations, c)
	if resp := callAs[*kmsg.CreateACLsResponse](t, b, "User:admin", r, 3); resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create: %d", resp.Results[0].ErrorCode)
	}
	if all := b.store.ACLs().All(); len(all) != 1 || all[0].Host != "0:0:0:0:0:0:0:1" {
		t.Fatalf("held %+v", all)
	}
	a := b.authFor(&wire.Request{Principal: "User:bob", RemoteAddr: &net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}})
	if !a.topic(acl.OpRead, "t") {
		t.Fatal("bob from ::1 may not read t")
	}
	d := kmsg.NewPtrDescribeACLsRequest()
	host := "::1"
	d.ResourceType, d.ResourcePatternType, d.Host = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, &host
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if dr := callAs[*kmsg.DescribeACLsResponse](t, b, "User:admin", d, 3); len(dr.Resources) != 1 {
		t.Fatalf("describe with host ::1: %d resources, code %d", len(dr.Resources), dr.ErrorCode)
	}
}
