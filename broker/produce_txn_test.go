package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// openTxn opens txnID's transaction on partition 0 of t as who and
// returns its producer id and epoch.
func openTxn(t *testing.T, b *Broker, who, txnID string) (int64, int16) {
	t.Helper()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &txnID, 60000
	ir := callAs[*kmsg.InitProducerIDResponse](t, b, who, ip, 3)
	if ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %d", ir.ErrorCode)
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = txnID, ir.ProducerID, ir.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "t", []int32{0}
	ap.Topics = append(ap.Topics, at)
	ar := callAs[*kmsg.AddPartitionsToTxnResponse](t, b, who, ap, 3)
	if c := ar.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("add partitions to txn: %d", c)
	}
	return ir.ProducerID, ir.ProducerEpoch
}

func txnBatch(pid int64, epoch int16, seq int32, value string) []byte {
	return batchtest.New(batchtest.Options{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true}, []byte(value))
}

func produceCode(t *testing.T, b *Broker, who string, r *kmsg.ProduceRequest, version int16) int16 {
	t.Helper()
	pr := callAs[*kmsg.ProduceResponse](t, b, who, r, version)
	return pr.Topics[0].Partitions[0].ErrorCode
}

// TestProduceIntoForeignTransaction: a principal with only Write on the
// topic cannot append transactional batches into another producer's open
// transaction, by leaving the transactional id out (Kafka: transactional
// records need a transactional id and Write on it) or by naming its own.
func TestProduceIntoForeignTransaction(t *testing.T) {
	b := authzBroker(t)
	grantACL(t, b, topicACL("t", "User:bob", acl.OpWrite))
	bobTx := acl.Binding{ResourceType: acl.ResourceTransactionalID, ResourceName: "bob-tx", PatternType: acl.PatternLiteral,
		Principal: "User:bob", Host: acl.WildcardHost, Operation: acl.OpWrite, Permission: acl.PermAllow}
	grantACL(t, b, bobTx)
	pid, epoch := openTxn(t, b, "User:admin", "victim-tx")
	victim, bobs := "victim-tx", "bob-tx"
	cases := []struct {
		name  string
		txnID *string
		want  int16
	}{
		{"no transactional id", nil, kerr.TransactionalIDAuthorizationFailed.Code},
		{"the victim's id, without Write on it", &victim, kerr.TransactionalIDAuthorizationFailed.Code},
		{"his own id", &bobs, kerr.InvalidProducerIDMapping.Code},
	}
	for _, tc := range cases {
		if c := produceCode(t, b, "User:bob", produceReq("t", tc.txnID, txnBatch(pid, epoch, 0, "injected")), 9); c != tc.want {
			t.Errorf("%s: code %d, want %d", tc.name, c, tc.want)
		}
	}
	if c := produceCode(t, b, "User:admin", produceReq("t", &victim, txnBatch(pid, epoch, 0, "own")), 9); c != 0 {
		t.Errorf("the transaction's own producer: code %d", c)
	}
}

// TestProduceTransactionalIDAuthorizerOff: without an authorizer, a
// transactional batch still needs its own transactional id: none (or a
// Produce before v3, which cannot carry one) is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED as Kafka does, another producer's
// with INVALID_PRODUCER_ID_MAPPING (Kafka's transaction verification).
func TestProduceTransactionalIDAuthorizerOff(t *testing.T) {
	b := newTestBroker(t, nil)
	pid, epoch := openTxn(t, b, "User:a", "tx")
	other := "other-tx"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &other, 60000
	if ir := callAs[*kmsg.InitProducerIDResponse](t, b, "User:b", ip, 3); ir.ErrorCode != 0 {
		t.Fatalf("init other: %d", ir.ErrorCode)
	}
	tx := "tx"
	cases := []struct {
		name    string
		txnID   *string
		version int16
		want    int16
	}{
		{"no transactional id", nil, 9, kerr.TransactionalIDAuthorizationFailed.Code},
		{"produce v2", nil, 2, kerr.TransactionalIDAuthorizationFailed.Code},
		{"another transactional id", &other, 9, kerr.InvalidProducerIDMapping.Code},
		{"its own", &tx, 9, 0},
	}
	for _, tc := range cases {
		if c := produceCode(t, b, "User:b", produceReq("t", tc.txnID, txnBatch(pid, epoch, 0, "x")), tc.version); c != tc.want {
			t.Errorf("%s: code %d, want %d", tc.name, c, tc.want)
		}
	}
}
