package e2e

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker"
	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/internal/node"
	"github.com/brokerd/brokerd/internal/tlsconf"
	"github.com/brokerd/brokerd/internal/tlstest"
)

// aclFixture is a node with the authorizer on, an SSL listener that
// requires client certificates (principal User:<CN>), User:admin as super
// user, and clients for admin and for bob (who has no ACL yet).
type aclFixture struct {
	n          *testNode
	ssl        string
	admin, bob *kgo.Client
	adm        *kadm.Client
	bobTLS     *tls.Config
}

func newACLFixture(t *testing.T, tweak ...func(*node.Config)) *aclFixture {
	ca := tlstest.NewCA(t, t.TempDir())
	server := ca.Server("server", "broker-1")
	clientTLS := func(cn string) *tls.Config {
		p := ca.Client(cn, pkix.Name{CommonName: cn, Organization: []string{"acme"}})
		return &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{p.TLS}}
	}
	n := startNode(t, append([]func(*node.Config){func(cfg *node.Config) {
		cfg.Listeners = []node.Listener{
			{Name: "PLAINTEXT", Protocol: node.ProtocolPlaintext, Addr: "127.0.0.1:0"},
			{Name: "SSL", Protocol: node.ProtocolSSL, Addr: "127.0.0.1:0"},
		}
		cfg.TLS = tlsconf.Config{KeystoreLocation: server.Keystore, TruststoreLocation: ca.CAFile, ClientAuth: "required",
			PrincipalRules: "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"}
		cfg.Authorizer.Enabled = true
		cfg.Authorizer.SuperUsers = []string{"User:admin"}
	}}, tweak...)...)
	f := &aclFixture{n: n, ssl: n.ListenerAddr("SSL"), bobTLS: clientTLS("bob")}
	f.admin = newKgo(t, f.ssl, kgo.DialTLSConfig(clientTLS("admin")))
	f.adm = kadm.NewClient(f.admin)
	f.bob = newKgo(t, f.ssl, kgo.DialTLSConfig(f.bobTLS), kgo.RequestRetries(0))
	return f
}

// grant has admin create ACLs and fails the test on any error.
func (f *aclFixture) grant(t *testing.T, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := f.adm.CreateACLs(testCtx(t, 10*time.Second), b)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

// aclCase is one API as bob sends it: the request and where its answer
// carries the error code.
type aclCase struct {
	name string
	req  func() kmsg.Request
	code func(kmsg.Response) int16
	want *kerr.Error
}

func aclCases(tid [16]byte) []aclCase {
	str := func(s string) *string { return &s }
	return []aclCase{
		{"Metadata", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = str("t")
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"Produce", func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = recordBatch("denied")
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"Fetch", func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes, r.SessionEpoch = -1, 1<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", tid
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"ListOffsets", func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"CreateTopics", func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bob-new", 1, 1
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DeleteTopics", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TopicNames = []string{"t2"}
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = str("t2")
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"CreatePartitions", func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "t2", 3
			r.Topics = append(r.Topics, rt)
			r.TimeoutMillis = 5000
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeConfigs", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeConfigs broker", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", str("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"IncrementalAlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", str("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DeleteRecords", func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			r.TimeoutMillis = 5000
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeLogDirs", func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"InitProducerID idempotent", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = -1
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"InitProducerID transactional", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = str("tx"), 10000
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"FindCoordinator group", func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
			return r
		}, func(r kmsg.Response) int16 {
			fr := r.(*kmsg.FindCoordinatorResponse)
			if len(fr.Coordinators) > 0 {
				return fr.Coordinators[0].ErrorCode
			}
			return fr.ErrorCode
		}, kerr.GroupAuthorizationFailed},
		{"FindCoordinator transaction", func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType = 1
			r.CoordinatorKey, r.CoordinatorKeys = "tx", []string{"tx"}
			return r
		}, func(r kmsg.Response) int16 {
			fr := r.(*kmsg.FindCoordinatorResponse)
			if len(fr.Coordinators) > 0 {
				return fr.Coordinators[0].ErrorCode
			}
			return fr.ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"JoinGroup", func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			r.Protocols = append(r.Protocols, p)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"SyncGroup", func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = "g", "m", 1
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"Heartbeat", func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "g", "m", 1
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"LeaveGroup", func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = "g", "m"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			r.Members = append(r.Members, m)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 99
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetFetch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group = "g"
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			r.Groups = append(r.Groups, g)
			return r
		}, func(r kmsg.Response) int16 {
			or := r.(*kmsg.OffsetFetchResponse)
			if len(or.Groups) > 0 {
				return or.Groups[0].ErrorCode
			}
			return or.ErrorCode
		}, kerr.GroupAuthorizationFailed},
		{"DescribeGroups", func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"DeleteGroups", func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetDelete", func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"AddPartitionsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"AddOffsetsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.Group = "tx", 1, "g"
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"EndTxn", func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.Commit = "tx", 1, true
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"TxnOffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID = "tx", "g", 1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 99
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"DescribeProducers", func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TopicAuthorizationFailed},
		{"DescribeTransactions", func() kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx"}
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"CreateAcls", func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeAcls", func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DeleteAcls", func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = append(r.Filters, f)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeUserScramCredentials", func() kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterUserScramCredentials", func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Mechanism, u.Iterations = "bob", 1, 4096
			u.Salt, u.SaltedPassword = []byte("salt-salt-salt"), make([]byte, 32)
			r.Upsertions = append(r.Upsertions, u)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
	}
}

// recordBatch is one record batch holding value.
func recordBatch(value string) []byte { return batchtest.New(batchtest.NoProducer, []byte(value)) }

func isAuthError(code int16) bool {
	switch code {
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code:
		return true
	}
	return false
}

// send sends req to node 1 directly (no coordinator lookup: that is
// authorized too) and returns the error code the case reads.
func (f *aclFixture) send(t *testing.T, c aclCase) int16 {
	t.Helper()
	resp, err := f.bob.Broker(1).Request(testCtx(t, 10*time.Second), c.req())
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return c.code(resp)
}

// aclState is what an unauthorized request must not change.
type aclState struct {
	end, start     int64
	t2Partitions   int
	bobNew         bool
	retention      string
	committed      int64
	acls, groupsOK int
}

func (f *aclFixture) state(t *testing.T) aclState {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	var s aclState
	s.end = endOffsets(t, f.adm, "t")[0]
	s.start = startOffsets(t, f.adm, "t")[0]
	td, err := f.adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.t2Partitions = len(td["t2"].Partitions)
	s.bobNew = td.Has("bob-new")
	rc, err := f.adm.DescribeTopicConfigs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			s.retention = c.MaybeValue()
		}
	}
	offs, err := f.adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("t", 0); ok {
		s.committed = o.At
	}
	acls, err := f.adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acls {
		if a.Err != nil {
			t.Fatalf("describe ACLs: %v", a.Err)
		}
		s.acls += len(a.Described)
	}
	return s
}

// TestACLAuthorizationMatrix sends every API as a principal without ACLs:
// each answers Kafka's authorization error and changes nothing. Then, with
// the ACLs granted, the same principal works through franz-go.
func TestACLAuthorizationMatrix(t *testing.T) {
	f := newACLFixture(t)
	ctx := testCtx(t, 60*time.Second)
	createTopic(t, f.adm, "t", 1, nil)
	createTopic(t, f.adm, "t2", 1, nil)
	for i := range 3 {
		if err := f.admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commit := kadm.Offsets{}
	commit.AddOffset("t", 0, 1, -1)
	if _, err := f.adm.CommitOffsets(ctx, "g", commit); err != nil {
		t.Fatal(err)
	}
	f.grant(t, kadm.NewACLs().Topics("unrelated").Allow("User:carol").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	before := f.state(t)
	td, err := f.adm.ListTopics(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	tid := [16]byte(td["t"].ID)

	for _, c := range aclCases(tid) {
		if got := f.send(t, c); got != c.want.Code {
			t.Errorf("%s as User:bob: error %s, want %s", c.name, kerr.ErrorForCode(got), c.want)
		}
	}
	// Listings leave out what bob may not describe.
	md, err := f.bob.Broker(1).Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.(*kmsg.MetadataResponse).Topics); n != 0 {
		t.Errorf("Metadata of all topics shows bob %d topics", n)
	}
	lg, err := f.bob.Broker(1).Request(ctx, kmsg.NewPtrListGroupsRequest())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(lg.(*kmsg.ListGroupsResponse).Groups); n != 0 {
		t.Errorf("ListGroups shows bob %d groups", n)
	}
	if after := f.state(t); after != before {
		t.Fatalf("unauthorized requests changed the state:\nbefore %+v\nafter  %+v", before, after)
	}

	// Granted: topics by prefix, the group, the transactional id, and
	// the cluster operations.
	f.grant(t, kadm.NewACLs().Topics("t").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:bob").
		Operations(kadm.OpRead, kadm.OpWrite, kadm.OpCreate, kadm.OpDelete, kadm.OpAlter, kadm.OpDescribeConfigs, kadm.OpAlterConfigs))
	f.grant(t, kadm.NewACLs().Topics("bob-new").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(kadm.OpCreate))
	f.grant(t, kadm.NewACLs().Groups("g").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(kadm.OpRead, kadm.OpDescribe, kadm.OpDelete))
	f.grant(t, kadm.NewACLs().TransactionalIDs("tx").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(kadm.OpWrite, kadm.OpDescribe))
	f.grant(t, kadm.NewACLs().Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(kadm.OpIdempotentWrite, kadm.OpAlter, kadm.OpDescribe, kadm.OpDescribeConfigs))

	// franz-go as bob: idempotent produce, a group consumer that commits,
	// and a transaction.
	bobOpts := []kgo.Opt{kgo.DialTLSConfig(f.bobTLS)}
	prod := newKgo(t, f.ssl, append(bobOpts, kgo.DefaultProduceTopic("t"))...)
	if err := prod.ProduceSync(ctx, kgo.StringRecord("granted")).FirstErr(); err != nil {
		t.Fatalf("produce as bob with Write: %v", err)
	}
	cons := newKgo(t, f.ssl, append(bobOpts, kgo.ConsumeTopics("t"), kgo.ConsumerGroup("g"), kgo.DisableAutoCommit())...)
	got := 0
	for got < 3 { // from the committed offset 1: records 1, 2 and "granted"
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume as bob: %d records", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume as bob: %v", err) })
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit as bob: %v", err)
	}
	txp := newKgo(t, f.ssl, append(bobOpts, kgo.DefaultProduceTopic("t"), kgo.TransactionalID("tx"))...)
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txp.ProduceSync(ctx, kgo.StringRecord("in-txn")).FirstErr(); err != nil {
		t.Fatalf("transactional produce as bob: %v", err)
	}
	if err := txp.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit transaction as bob: %v", err)
	}
	bobAdm := kadm.NewClient(newKgo(t, f.ssl, bobOpts...))
	if _, err := bobAdm.CreateTopic(ctx, 1, 1, nil, "bob-new"); err != nil {
		t.Fatalf("create topic as bob: %v", err)
	}
	if acls, err := bobAdm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()); err != nil || acls[0].Err != nil {
		t.Fatalf("describe ACLs as bob: %v %v", err, acls)
	}

	// Every API now gets past authorization (what it then answers
	// depends on the made-up request: a fake member, a fake producer).
	for _, c := range aclCases(tid) {
		if c.name == "DeleteAcls" {
			continue // it would delete bob's grants
		}
		if got := f.send(t, c); isAuthError(got) {
			t.Errorf("%s as User:bob with ACLs: still %s", c.name, kerr.ErrorForCode(got))
		}
	}

	// Deny wins over the prefixed allow.
	f.grant(t, kadm.NewACLs().Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).Deny("User:bob").Operations(kadm.OpWrite))
	if got := f.send(t, aclCases(tid)[1]); got != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce with a deny: %s", kerr.ErrorForCode(got))
	}
}

// TestACLsDisabled: without the authorizer every request is allowed and
// the ACL APIs answer SECURITY_DISABLED, as Kafka's without an authorizer.
func TestACLsDisabled(t *testing.T) {
	n := startNode(t)
	adm := newAdmin(t, n.KafkaAddr())
	_, err := adm.CreateACLs(testCtx(t, 10*time.Second), kadm.NewACLs().Topics("t").Allow("User:bob").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil {
		res, _ := adm.CreateACLs(testCtx(t, 10*time.Second), kadm.NewACLs().Topics("t").Allow("User:bob").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
		if len(res) == 0 || res[0].Err == nil {
			t.Fatal("CreateAcls succeeded with the authorizer off")
		}
		err = res[0].Err
	}
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("CreateAcls with the authorizer off: %v, want SECURITY_DISABLED", err)
	}
}

// TestACLsReplicated: ACLs created through the leader are in every node's
// DescribeAcls of a 3-node cluster, and a follower refuses changes with
// NOT_CONTROLLER.
func TestACLsReplicated(t *testing.T) {
	nodes := startCluster(t, 3, func(cfg *node.Config) {
		cfg.Authorizer = broker.AuthorizerConfig{Enabled: true, SuperUsers: []string{"User:ANONYMOUS"}}
	})
	ctx := testCtx(t, 60*time.Second)
	cl := newKgo(t, nodes[0].KafkaAddr())
	var leader int32 = -1
	for leader < 0 {
		for i, n := range nodes {
			if n.Store().IsLeader() && len(n.Store().Brokers()) == 3 {
				leader = int32(i + 1)
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no leader with 3 registered brokers")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// kgo learns every broker from Metadata, once the node it asks has
	// applied all three registrations (kadm's BrokerMetadata answers from
	// the client's cache).
	for len(cl.DiscoveredBrokers()) < 3 {
		if ctx.Err() != nil {
			t.Fatalf("the client knows %d brokers", len(cl.DiscoveredBrokers()))
		}
		cl.ForceMetadataRefresh()
		time.Sleep(50 * time.Millisecond)
	}
	create := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypePrefixed
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, c)
	for id := int32(1); id <= 3; id++ {
		resp, err := cl.Broker(int(id)).Request(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode
		if id == leader && code != 0 || id != leader && code != kerr.NotController.Code {
			t.Fatalf("CreateAcls on node %d (leader %d): %s", id, leader, kerr.ErrorForCode(code))
		}
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType, describe.Operation, describe.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	for id := 1; id <= 3; id++ {
		for {
			resp, err := cl.Broker(id).Request(ctx, describe)
			if err != nil {
				t.Fatal(err)
			}
			if r := resp.(*kmsg.DescribeACLsResponse); r.ErrorCode == 0 && len(r.Resources) == 1 && r.Resources[0].ResourceName == "orders" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %d never showed the ACL", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := nodes[id-1].Store().ACLs().Len(); n != 1 {
			t.Fatalf("node %d holds %d ACLs", id, n)
		}
	}
}
