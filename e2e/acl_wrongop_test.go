package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// wrongGrants gives, per case of aclCases, ACLs that grant bob every
// resource the request names but never the operation it needs (nor one
// that implies it): a check of the wrong operation passes them.
func wrongGrants() map[string]func() *kadm.ACLBuilder {
	topic := func(name string, ops ...kadm.ACLOperation) func() *kadm.ACLBuilder {
		return func() *kadm.ACLBuilder {
			return kadm.NewACLs().Topics(name).ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(ops...)
		}
	}
	group := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder {
		return kadm.NewACLs().Groups("g").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(ops...)
	}
	txn := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder {
		return kadm.NewACLs().TransactionalIDs("tx").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(ops...)
	}
	cluster := func(ops ...kadm.ACLOperation) func() *kadm.ACLBuilder {
		return func() *kadm.ACLBuilder {
			return kadm.NewACLs().Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(ops...)
		}
	}
	// Read, Write, Delete and Alter imply Describe; AlterConfigs implies
	// DescribeConfigs: a case needing one gets none of those.
	return map[string]func() *kadm.ACLBuilder{
		"Produce":                      topic("t", kadm.OpRead, kadm.OpDescribe, kadm.OpAlter),
		"Fetch":                        topic("t", kadm.OpWrite, kadm.OpDescribe, kadm.OpDelete),
		"ListOffsets":                  topic("t", kadm.OpCreate, kadm.OpDescribeConfigs),
		"CreateTopics":                 topic("bob-new", kadm.OpDescribe, kadm.OpAlter, kadm.OpWrite),
		"DeleteTopics":                 topic("t2", kadm.OpDescribe, kadm.OpAlter, kadm.OpWrite),
		"CreatePartitions":             topic("t2", kadm.OpDescribe, kadm.OpDelete, kadm.OpAlterConfigs),
		"DescribeConfigs":              topic("t", kadm.OpDescribe, kadm.OpAlter),
		"AlterConfigs":                 topic("t", kadm.OpAlter, kadm.OpDescribeConfigs),
		"IncrementalAlterConfigs":      topic("t", kadm.OpAlter, kadm.OpDescribeConfigs),
		"DeleteRecords":                topic("t", kadm.OpWrite, kadm.OpAlter, kadm.OpRead),
		"DescribeLogDirs":              cluster(kadm.OpCreate, kadm.OpDescribeConfigs, kadm.OpIdempotentWrite),
		"InitProducerID idempotent":    func() *kadm.ACLBuilder { return topic("t", kadm.OpRead, kadm.OpDescribe)().Clusters() },
		"InitProducerID transactional": func() *kadm.ACLBuilder { return txn(kadm.OpDescribe) },
		"JoinGroup":                    func() *kadm.ACLBuilder { return group(kadm.OpDescribe, kadm.OpDelete) },
		"SyncGroup":                    func() *kadm.ACLBuilder { return group(kadm.OpDescribe, kadm.OpDelete) },
		"Heartbeat":                    func() *kadm.ACLBuilder { return group(kadm.OpDescribe, kadm.OpDelete) },
		"LeaveGroup":                   func() *kadm.ACLBuilder { return group(kadm.OpDescribe, kadm.OpDelete) },
		"OffsetCommit":                 func() *kadm.ACLBuilder { return group(kadm.OpDescribe, kadm.OpDelete).Topics("t") },
		"DeleteGroups":                 func() *kadm.ACLBuilder { return group(kadm.OpRead, kadm.OpDescribe) },
		"OffsetDelete":                 func() *kadm.ACLBuilder { return group(kadm.OpRead, kadm.OpDescribe).Topics("t") },
		"AddPartitionsToTxn":           func() *kadm.ACLBuilder { return txn(kadm.OpDescribe, kadm.OpRead).Topics("t") },
		"AddOffsetsToTxn":              func() *kadm.ACLBuilder { return txn(kadm.OpDescribe, kadm.OpRead).Groups("g") },
		"EndTxn":                       func() *kadm.ACLBuilder { return txn(kadm.OpDescribe, kadm.OpRead) },
		"TxnOffsetCommit":              func() *kadm.ACLBuilder { return txn(kadm.OpDescribe, kadm.OpRead).Groups("g").Topics("t") },
		"CreateAcls":                   cluster(kadm.OpDescribe, kadm.OpAlterConfigs, kadm.OpCreate),
		"DeleteAcls":                   cluster(kadm.OpDescribe, kadm.OpAlterConfigs, kadm.OpCreate),
		"AlterUserScramCredentials":    cluster(kadm.OpDescribe, kadm.OpAlterConfigs, kadm.OpCreate),
		"DescribeUserScramCredentials": cluster(kadm.OpAlterConfigs, kadm.OpCreate, kadm.OpIdempotentWrite),
	}
}

// TestACLWrongOperation grants bob, for each API in turn, ACLs on every
// resource it names but only operations other than the one it needs:
// each is still refused with Kafka's error, and nothing changes. (The
// matrix's phases grant nothing, or nearly everything: a check of the
// wrong operation passes both.)
func TestACLWrongOperation(t *testing.T) {
	f := newACLFixture(t)
	ctx := testCtx(t, 120*time.Second)
	createTopic(t, f.adm, "t", 1, nil)
	createTopic(t, f.adm, "t2", 1, nil)
	commit := kadm.Offsets{}
	commit.AddOffset("t", 0, 0, -1)
	if _, err := f.adm.CommitOffsets(ctx, "g", commit); err != nil {
		t.Fatal(err)
	}
	td, err := f.adm.ListTopics(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	before := f.state(t)
	grants := wrongGrants()
	bobs := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow("User:bob").AllowHosts()
	tested := 0
	for _, c := range aclCases([16]byte(td["t"].ID)) {
		grant, ok := grants[c.name]
		if !ok {
			continue
		}
		tested++
		f.grant(t, grant())
		if got := f.send(t, c); got != c.want.Code {
			t.Errorf("%s with only a wrong operation: error %s, want %s", c.name, kerr.ErrorForCode(got), c.want)
		}
		if _, err := f.adm.DeleteACLs(ctx, bobs); err != nil {
			t.Fatalf("delete bob's ACLs: %v", err)
		}
	}
	if tested != len(grants) {
		t.Fatalf("%d of %d wrong-operation cases match a case of aclCases", tested, len(grants))
	}
	if after := f.state(t); after != before {
		t.Fatalf("requests with a wrong operation changed the state:\nbefore %+v\nafter  %+v", before, after)
	}
}
