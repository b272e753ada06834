package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/brokerd/brokerd/internal/node"
)

// A client of a listener the partition leader does not have cannot reach
// the leader: as Kafka, Metadata names no leader and says
// LISTENER_NOT_FOUND (LEADER_NOT_AVAILABLE before v6), and lists only the
// brokers that have the listener.
func TestMetadataLeaderWithoutListener(t *testing.T) {
	nodes := startCluster(t, 3, func(cfg *node.Config) {
		cfg.Listeners = []node.Listener{{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"}}
		if cfg.NodeID != 3 {
			cfg.Listeners = append(cfg.Listeners, node.Listener{Name: "EXTRA", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"})
		}
	})
	leaderIs := func(id int32) {
		t.Helper()
		waitUntil(t, 30*time.Second, "a leader", func() bool {
			for _, n := range nodes {
				if n.Store().IsLeader() {
					return true
				}
			}
			return false
		})
		for _, n := range nodes {
			if n.Store().IsLeader() && n.Store().Self().NodeID != id {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := n.Store().TransferLeadershipTo(ctx, id)
				cancel()
				if err != nil {
					t.Fatalf("hand leadership to node %d: %v", id, err)
				}
			}
		}
		waitUntil(t, 30*time.Second, "node leads", func() bool { return nodes[id-1].Store().IsLeader() })
	}
	leaderIs(1)
	cl := newKgo(t, nodes[0].ListenerAddr("PLAINTEXT"))
	createTopic(t, kadm.NewClient(cl), "listeners", 1, nil)
	extra := newKgo(t, nodes[0].ListenerAddr("EXTRA"))
	// A client of Kafka 1.0's versions: Metadata v5.
	extraV5 := newKgo(t, nodes[0].ListenerAddr("EXTRA"), kgo.MaxVersions(kversion.V1_0_0()))
	ask := func(cl *kgo.Client) *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		tr := kmsg.NewMetadataRequestTopic()
		name := "listeners"
		tr.Topic = &name
		req.Topics = append(req.Topics, tr)
		var resp *kmsg.MetadataResponse
		waitUntil(t, 20*time.Second, "Metadata answered", func() bool {
			r, err := req.RequestWith(testCtx(t, 5*time.Second), cl)
			resp = r
			return err == nil && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1
		})
		return resp
	}
	p := ask(extra).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Leader != 1 {
		t.Fatalf("leader with the listener: error %d, leader %d", p.ErrorCode, p.Leader)
	}
	leaderIs(3)
	var resp *kmsg.MetadataResponse
	waitUntil(t, 20*time.Second, "Metadata to see node 3 lead, and nodes 1 and 2 registered", func() bool {
		resp = ask(extra)
		return resp.Topics[0].Partitions[0].ErrorCode != 0 && len(resp.Brokers) == 2
	})
	p = resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.ListenerNotFound.Code || p.Leader != -1 {
		t.Fatalf("leader without the listener, v12: error %d, leader %d", p.ErrorCode, p.Leader)
	}
	if len(resp.Brokers) != 2 {
		t.Fatalf("brokers on EXTRA: %v", resp.Brokers)
	}
	if p := ask(extraV5).Topics[0].Partitions[0]; p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1 {
		t.Fatalf("leader without the listener, v5: error %d, leader %d", p.ErrorCode, p.Leader)
	}
}
