package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/broker/throttle"
	"github.com/brokerd/brokerd/internal/node"
)

// throttleHook counts the throttles franz-go is told of.
type throttleHook struct {
	n     atomic.Int64
	total atomic.Int64 // ns
	after atomic.Bool
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, after bool) {
	if d > 0 {
		h.n.Add(1)
		h.total.Add(int64(d))
		h.after.Store(after)
	}
}

// TestClientQuotaThrottlesProducer sets producer_byte_rate on a client id
// with kadm, produces flat out, and checks that throughput converges on
// the quota and that responses carry throttle_time_ms. The quota window
// is 11 x 200 ms here (Kafka's is 11 x 1 s), so the test is short.
func TestClientQuotaThrottlesProducer(t *testing.T) {
	const quotaRate = 256 << 10 // bytes per second
	n := startNode(t, func(c *node.Config) { c.QuotaWindow = throttle.Window{Samples: 11, Size: 200 * time.Millisecond} })
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, n.KafkaAddr())
	createTopic(t, adm, "quota", 1, nil)

	client := "slow-producer"
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &client}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	desc, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &client, MatchType: 0}})
	if err != nil || len(desc) != 1 || len(desc[0].Values) != 1 || desc[0].Values[0].Key != "producer_byte_rate" || desc[0].Values[0].Value != quotaRate {
		t.Fatalf("describe: %v %+v", err, desc)
	}
	// An unknown key is INVALID_REQUEST.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "bogus_rate", Value: 1}},
	}})
	if err != nil || len(res) != 1 || res[0].Err == nil {
		t.Fatalf("an unknown key was accepted: %v %+v", err, res)
	}

	hook := &throttleHook{}
	cl := newKgo(t, n.KafkaAddr(), kgo.ClientID(client), kgo.WithHooks(hook), kgo.DefaultProduceTopic("quota"),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 4<<10)
	const run = 5 * time.Second
	start := time.Now()
	var mu sync.Mutex
	var acked []time.Duration // ack time of each record
	pctx, cancel := context.WithTimeout(ctx, run)
	defer cancel()
	for pctx.Err() == nil {
		cl.Produce(pctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err == nil {
				mu.Lock()
				acked = append(acked, time.Since(start))
				mu.Unlock()
			}
		})
	}
	cl.Close()
	mu.Lock()
	defer mu.Unlock()
	// The first two seconds hold the burst the window allows (its 10
	// samples' worth); after them the rate is the quota's.
	from, to := 2500*time.Millisecond, run
	var bytes int
	for _, at := range acked {
		if at >= from && at < to {
			bytes += len(value)
		}
	}
	rate := float64(bytes) / (to - from).Seconds()
	t.Logf("%d records acked in %v; %.0f B/s from %v to %v (quota %d B/s); %d throttles, %v in all (after response: %v)",
		len(acked), run, rate, from, to, quotaRate, hook.n.Load(), time.Duration(hook.total.Load()), hook.after.Load())
	if rate > 1.5*quotaRate || rate < 0.5*quotaRate {
		t.Errorf("throughput %.0f B/s is not near the %d B/s quota", rate, quotaRate)
	}
	if hook.n.Load() == 0 || !hook.after.Load() {
		t.Errorf("no throttle_time_ms honoured after the response: %d", hook.n.Load())
	}

	// The quota survives a restart.
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, func(c *node.Config) { c.DataDir = cfg.DataDir })
	// Strict: the client-id entity matches a filter on its client id
	// alone, and not one that also asks for a user.
	exact := []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &client, MatchType: 0}}
	desc, err = newAdmin(t, n2.KafkaAddr()).DescribeClientQuotas(ctx, true, exact)
	if err != nil {
		t.Fatal(err)
	}
	withUser := append([]kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, exact...)
	none, err := newAdmin(t, n2.KafkaAddr()).DescribeClientQuotas(ctx, true, withUser)
	if err != nil {
		t.Fatal(err)
	}
	all, err := newAdmin(t, n2.KafkaAddr()).DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(desc) != 1 || desc[0].Values[0].Value != quotaRate || len(none) != 0 || len(all) != 1 || all[0].Values[0].Value != quotaRate {
		t.Fatalf("after restart: %v strict %+v, strict with a user %+v, all %+v", err, desc, none, all)
	}
}
