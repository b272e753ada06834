package broker

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// authzBroker is a test broker with the authorizer on and User:admin a
// super user.
func authzBroker(t *testing.T) *Broker {
	return newTestBroker(t, func(c *Config) {
		c.Authorizer = AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:admin"}}
	})
}

// callAs runs req (at version) through the broker's handler as the
// principal who, from 10.0.0.9.
func callAs[R kmsg.Response](t *testing.T, b *Broker, who string, req kmsg.Request, version int16) R {
	t.Helper()
	req.SetVersion(version)
	resp, err := b.Handle(context.Background(), &wire.Request{
		Header:     wire.RequestHeader{APIKey: req.Key(), APIVersion: version},
		Msg:        req,
		Principal:  who,
		RemoteAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 1234},
	})
	if err != nil {
		t.Fatalf("api %d v%d: %v", req.Key(), version, err)
	}
	return resp.(R)
}

// topicACL is an allow of op on the literal topic name for principal.
func topicACL(name, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: name, PatternType: acl.PatternLiteral,
		Principal: principal, Host: acl.WildcardHost, Operation: op, Permission: acl.PermAllow}
}

func grantACL(t *testing.T, b *Broker, bd acl.Binding) {
	t.Helper()
	errs, err := b.store.CreateACLs(context.Background(), []acl.Binding{bd})
	if err != nil || errs[0] != nil {
		t.Fatalf("create ACL: %v %v", err, errs)
	}
}

func revokeAllACLs(t *testing.T, b *Broker) {
	t.Helper()
	all := acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny}
	if _, err := b.store.DeleteACLs(context.Background(), []acl.Filter{all}); err != nil {
		t.Fatalf("delete ACLs: %v", err)
	}
}

// fetchReq is a consumer Fetch of partition 0 of each topic (by name).
func fetchReq(sessionID, epoch int32, topics ...string) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID, r.MaxBytes, r.SessionID, r.SessionEpoch = -1, 1<<20, sessionID, epoch
	for _, tp := range topics {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = tp
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// fetchedFrom is the record bytes and the error codes, one per partition
// entry, a Fetch response holds for topic.
func fetchedFrom(resp *kmsg.FetchResponse, topic string) (n int, codes []int16) {
	for _, t := range resp.Topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
			codes = append(codes, p.ErrorCode)
		}
	}
	return n, codes
}

// produceReq is a Produce of one batch to partition 0 of topic.
func produceReq(topic string, txnID *string, batch []byte) *kmsg.ProduceRequest {
	p := kmsg.NewPtrProduceRequest()
	p.Acks, p.TimeoutMillis, p.TransactionID = -1, 5000, txnID
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	p.Topics = append(p.Topics, pt)
	return p
}

// produceAs produces value to partition 0 of topic as who and returns the
// partition's error code.
func produceAs(t *testing.T, b *Broker, who, topic string, value string) int16 {
	t.Helper()
	pr := callAs[*kmsg.ProduceResponse](t, b, who, produceReq(topic, nil, batchtest.New(batchtest.NoProducer, []byte(value))), 9)
	return pr.Topics[0].Partitions[0].ErrorCode
}
