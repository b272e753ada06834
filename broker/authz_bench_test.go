package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/raftstore/acl"
	"github.com/brokerd/brokerd/topic"
)

// BenchmarkAuthProduce is the authorization of a Produce of one 1 KiB
// idempotent batch with Write on the topic: what the authorizer adds to
// the hot path.
func BenchmarkAuthProduce(b *testing.B) {
	br := newBenchBroker(b, AuthorizerConfig{Enabled: true})
	errs, err := br.store.CreateACLs(context.Background(), []acl.Binding{topicACL("t", "User:bob", acl.OpWrite)})
	if err != nil || errs[0] != nil {
		b.Fatal(err, errs)
	}
	wr := &wire.Request{Principal: "User:bob", RemoteAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 1}}
	batch := batchtest.New(batchtest.Options{ProducerID: 1, BaseSequence: 0}, bytes.Repeat([]byte{1}, 1024))
	p := produceReq("t", nil, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		a := br.authFor(wr)
		if denied, merge := authProduce(br, a, p); denied != nil || merge != nil {
			b.Fatal("denied")
		}
	}
}

// newBenchBroker is a single-node broker with topic t.
func newBenchBroker(b *testing.B, az AuthorizerConfig) *Broker {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := raftstore.Open(raftstore.Config{NodeID: 1, DataDir: b.TempDir(), RaftAddr: "127.0.0.1:0",
		Broker: raftstore.BrokerInfo{NodeID: 1, Host: "127.0.0.1", Port: 9092}, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	br := New(Config{NodeID: 1, ClusterID: "test", Logger: logger, GroupInitialRebalanceDelay: -1, Authorizer: az}, s)
	b.Cleanup(func() { br.Close(); _ = s.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !br.groups.Active() {
		if time.Now().After(deadline) {
			b.Fatal("not active")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.CreateTopic(context.Background(), "t", topic.NewID(), 2, nil); err != nil {
		b.Fatal(err)
	}
	return br
}

// BenchmarkFetchDenied is the authorization of a fetch session of 100
// partitions over 10 topics: with the authorizer off (nothing to do, no
// allocation) and on (one lookup per topic).
func BenchmarkFetchDenied(b *testing.B) {
	br := newBenchBroker(b, AuthorizerConfig{Enabled: true})
	var bindings []acl.Binding
	var parts []fetchsession.Partition
	for i := range 100 {
		name := fmt.Sprintf("topic-%d", i/10)
		if i%10 == 0 {
			bindings = append(bindings, topicACL(name, "User:bob", acl.OpRead))
		}
		parts = append(parts, fetchsession.Partition{Key: fetchsession.Key{Topic: name, Partition: int32(i % 10)}})
	}
	if _, err := br.store.CreateACLs(context.Background(), bindings); err != nil {
		b.Fatal(err)
	}
	r := kmsg.NewPtrFetchRequest()
	r.ReplicaID, r.Version = -1, 12
	wr := &wire.Request{Principal: "User:bob", RemoteAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 1}}
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("authorizer=%v", on), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var a *authCtx
				if on {
					a = br.authFor(wr)
				}
				if denied, _ := fetchDenied(a, r, parts, nil); denied != nil {
					b.Fatal("denied")
				}
			}
		})
	}
}
