package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteTopicKill9: delete a topic with data and SIGKILL brokerd right
// after the deletion is acknowledged. The restarted broker must start (it
// used to fail with "partition X-0 ends at 0 but its checkpoint says N"),
// the topic must stay deleted, other topics' data must be intact, and the
// name must be reusable. Rounds alternate between a deletion after a
// checkpoint covered the data and one inside the checkpoint window of the
// topic's (re-)creation.
func TestDeleteTopicKill9(t *testing.T) {
	bp := newBrokerProc(t)
	bp.start()
	for round := 0; round < 3; round++ {
		adm := kadm.NewClient(newKgo(t, bp.kafkaAddr()))
		keep := fmt.Sprintf("keep-%d", round)
		createTopic(t, adm, keep, 1, nil)
		createTopic(t, adm, "doomed", 2, nil)
		prod := newKgo(t, bp.kafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		ctx := testCtx(t, 30*time.Second)
		for i := 0; i < 50; i++ {
			for _, r := range []*kgo.Record{{Topic: keep, Value: []byte("k")}, {Topic: "doomed", Partition: int32(i % 2), Value: []byte("d")}} {
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
			}
		}
		if round%2 == 0 {
			time.Sleep(1500 * time.Millisecond) // a checkpoint covers the data
		}
		resp, err := adm.DeleteTopics(ctx, "doomed")
		if err != nil || resp["doomed"].Err != nil {
			t.Fatalf("delete: %v %v", err, resp["doomed"].Err)
		}
		bp.kill()
		bp.start()

		adm = kadm.NewClient(newKgo(t, bp.kafkaAddr()))
		tds, err := adm.ListTopics(testCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("list topics: %v", err)
		}
		if tds.Has("doomed") {
			t.Fatalf("round %d: the deleted topic is back after the restart", round)
		}
		for r := 0; r <= round; r++ {
			name := fmt.Sprintf("keep-%d", r)
			if e := endOffsets(t, adm, name); e[0] != 50 {
				t.Fatalf("round %d: %s ends at %d, want 50", round, name, e[0])
			}
		}
	}
}
