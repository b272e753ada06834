package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestIdempotentInitProducerIDAllowEveryone: with
// allow.everyone.if.no.acl.found, an idempotent producer may start when
// ACLs exist on other topics (Kafka's authorizeByResourceType authorizes a
// made-up topic name first).
func TestIdempotentInitProducerIDAllowEveryone(t *testing.T) {
	b := newTestBroker(t, func(c *Config) {
		c.Authorizer = AuthorizerConfig{Enabled: true, AllowEveryoneIfNoACLFound: true}
	})
	grantACL(t, b, topicACL("carol-only", "User:carol", acl.OpRead))
	r := kmsg.NewPtrInitProducerIDRequest()
	if resp := callAs[*kmsg.InitProducerIDResponse](t, b, "User:bob", r, 4); resp.ErrorCode != 0 {
		t.Fatalf("idempotent InitProducerId: code %d", resp.ErrorCode)
	}
}
