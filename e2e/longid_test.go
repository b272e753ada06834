package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
)

// TestLongGroupAndTransactionalIDs: ids longer than the state keeps are
// refused when they arrive, with Kafka's codes, instead of being stored
// and then failing the checkpoint or every snapshot sent to a follower.
func TestLongGroupAndTransactionalIDs(t *testing.T) {
	n := startNode(t)
	addr := n.KafkaAddr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "long-ids", 1, nil)
	ctx := testCtx(t, 30*time.Second)

	long := strings.Repeat("g", raftstore.MaxIDBytes+1)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "long-ids", Partition: 0, At: 1, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, long, offs)
	if err == nil {
		err = resp.Error()
	}
	if !errors.Is(err, kerr.InvalidGroupID) {
		t.Fatalf("commit for a group id of %d bytes: %v", len(long), err)
	}
	// One at the limit is kept.
	ok := strings.Repeat("g", raftstore.MaxIDBytes)
	resp, err = adm.CommitOffsets(ctx, ok, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit for a group id of %d bytes: %v", len(ok), err)
	}

	// franz-go itself refuses such an id; a raw request carries it.
	rc := dialRaw(t, addr)
	req := kmsg.NewPtrInitProducerIDRequest()
	txn := strings.Repeat("t", raftstore.MaxIDBytes+1)
	req.TransactionalID = &txn
	req.TransactionTimeoutMillis = 60000
	ip := roundTrip(rc, req, 1, kmsg.NewPtrInitProducerIDResponse())
	if ip.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("InitProducerId with a transactional id of %d bytes: error %d, want INVALID_REQUEST", len(txn), ip.ErrorCode)
	}
}
