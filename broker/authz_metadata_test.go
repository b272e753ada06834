package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// TestMetadataAutoCreateNeedsCreate: Describe alone on a topic that does
// not exist answers TOPIC_AUTHORIZATION_FAILED and creates nothing;
// Describe and Create create it.
func TestMetadataAutoCreateNeedsCreate(t *testing.T) {
	b := newTestBroker(t, func(c *Config) {
		c.Authorizer = AuthorizerConfig{Enabled: true}
		c.AutoCreateTopics, c.NumPartitions = true, 1
	})
	grantACL(t, b, topicACL("new", "User:bob", acl.OpDescribe))
	ask := func() int16 {
		r := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		name := "new"
		rt.Topic = &name
		r.Topics, r.AllowAutoTopicCreation = append(r.Topics, rt), true
		resp := callAs[*kmsg.MetadataResponse](t, b, "User:bob", r, 9)
		if len(resp.Topics) != 1 {
			t.Fatalf("%d topics answered", len(resp.Topics))
		}
		return resp.Topics[0].ErrorCode
	}
	if c := ask(); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("Describe only: code %d", c)
	}
	if _, ok := b.store.Topic("new"); ok {
		t.Fatal("created without Create")
	}
	grantACL(t, b, topicACL("new", "User:bob", acl.OpCreate))
	if c := ask(); c != 0 {
		t.Fatalf("Describe and Create: code %d", c)
	}
	if _, ok := b.store.Topic("new"); !ok {
		t.Fatal("not created")
	}
}
