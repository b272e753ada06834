package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// authRule is what one API needs, following Kafka's KafkaApis. check
// either refuses the whole request (a response carrying Kafka's error
// code) or takes the unauthorized parts out of the request and returns a
// merge that puts their refusals into the handler's answer. A nil check
// needs nothing.
type authRule struct {
	needs string // for the docs (docs/SECURITY.md) and the table test
	// inHandler says the handler authorizes (check is nil): a Fetch's
	// session partitions are known only there (fetch_authz.go).
	inHandler bool
	check     func(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response))
}

// apiAuth is every served API's authorization, in one place. Every key in
// supported has an entry (TestEveryAPIHasAnAuthRule).
var apiAuth = map[int16]authRule{
	int16(kmsg.ApiVersions):                  {needs: "nothing", check: nil},
	int16(kmsg.Metadata):                     {needs: "Describe on each topic listed (all topics: only those allowed are listed); auto-creation: Create on Cluster or on the topic", check: authMetadata},
	int16(kmsg.Produce):                      {needs: "Write on each topic; with a transactional batch, a TransactionalId and Write on it (else the whole request is refused)", check: authProduce},
	int16(kmsg.Fetch):                        {needs: "Read on each topic the fetch session reads, on every fetch (a replica fetch: ClusterAction on Cluster)", inHandler: true},
	int16(kmsg.ListOffsets):                  {needs: "Describe on each topic", check: authListOffsets},
	int16(kmsg.OffsetForLeaderEpoch):         {needs: "Describe on each topic (a replica: ClusterAction on Cluster)", check: authOffsetForLeaderEpoch},
	int16(kmsg.CreateTopics):                 {needs: "Create on Cluster or on each topic", check: authCreateTopics},
	int16(kmsg.DeleteTopics):                 {needs: "Delete on each topic", check: authDeleteTopics},
	int16(kmsg.CreatePartitions):             {needs: "Alter on each topic", check: authCreatePartitions},
	int16(kmsg.DescribeConfigs):              {needs: "DescribeConfigs on each topic; on Cluster for broker resources", check: authDescribeConfigs},
	int16(kmsg.AlterConfigs):                 {needs: "AlterConfigs on each topic; on Cluster for broker resources", check: authAlterConfigs},
	int16(kmsg.IncrementalAlterConfigs):      {needs: "AlterConfigs on each topic; on Cluster for broker resources", check: authIncrementalAlterConfigs},
	int16(kmsg.DeleteRecords):                {needs: "Delete on each topic", check: authDeleteRecords},
	int16(kmsg.DescribeLogDirs):              {needs: "Describe on Cluster", check: authDescribeLogDirs},
	int16(kmsg.DescribeCluster):              {needs: "nothing (as Kafka: the brokers are public, like Metadata's)", check: nil},
	int16(kmsg.InitProducerID):               {needs: "Write on the TransactionalId; without one, IdempotentWrite on Cluster or Write on some topic", check: authInitProducerID},
	int16(kmsg.FindCoordinator):              {needs: "Describe on the group, or on the TransactionalId", check: authFindCoordinator},
	int16(kmsg.JoinGroup):                    {needs: "Read on the group", check: authJoinGroup},
	int16(kmsg.SyncGroup):                    {needs: "Read on the group", check: authSyncGroup},
	int16(kmsg.Heartbeat):                    {needs: "Read on the group", check: authHeartbeat},
	int16(kmsg.LeaveGroup):                   {needs: "Read on the group", check: authLeaveGroup},
	int16(kmsg.OffsetCommit):                 {needs: "Read on the group; Read on each topic", check: authOffsetCommit},
	int16(kmsg.OffsetFetch):                  {needs: "Describe on the group; Describe on each topic (all topics: only those allowed)", check: authOffsetFetch},
	int16(kmsg.DescribeGroups):               {needs: "Describe on each group", check: authDescribeGroups},
	int16(kmsg.ListGroups):                   {needs: "Describe on Cluster, or lists only the groups with Describe", check: authListGroups},
	int16(kmsg.DeleteGroups):                 {needs: "Delete on each group", check: authDeleteGroups},
	int16(kmsg.OffsetDelete):                 {needs: "Delete on the group; Read on each topic", check: authOffsetDelete},
	int16(kmsg.AddPartitionsToTxn):           {needs: "Write on the TransactionalId; Write on each topic (one refused: none added)", check: authAddPartitionsToTxn},
	int16(kmsg.AddOffsetsToTxn):              {needs: "Write on the TransactionalId; Read on the group", check: authAddOffsetsToTxn},
	int16(kmsg.EndTxn):                       {needs: "Write on the TransactionalId", check: authEndTxn},
	int16(kmsg.TxnOffsetCommit):              {needs: "Write on the TransactionalId; Read on the group; Read on each topic", check: authTxnOffsetCommit},
	int16(kmsg.DescribeProducers):            {needs: "Read on each topic", check: authDescribeProducers},
	int16(kmsg.DescribeTransactions):         {needs: "Describe on each TransactionalId", check: authDescribeTransactions},
	int16(kmsg.ListTransactions):             {needs: "lists only the TransactionalIds with Describe", check: authListTransactions},
	int16(kmsg.CreateACLs):                   {needs: "Alter on Cluster", check: authCreateACLs},
	int16(kmsg.DescribeACLs):                 {needs: "Describe on Cluster", check: authDescribeACLs},
	int16(kmsg.DeleteACLs):                   {needs: "Alter on Cluster", check: authDeleteACLs},
	int16(kmsg.DescribeUserSCRAMCredentials): {needs: "Describe on Cluster", check: authDescribeUserScram},
	int16(kmsg.AlterUserSCRAMCredentials):    {needs: "Alter on Cluster", check: authAlterUserScram},
	// Answered by the connection itself (broker/wire), before and for
	// authentication: nothing to authorize.
	int16(kmsg.SASLHandshake):        {needs: "nothing", check: nil},
	int16(kmsg.SASLAuthenticate):     {needs: "nothing", check: nil},
	int16(kmsg.DescribeClientQuotas): {needs: "DescribeConfigs on Cluster", check: authDescribeClientQuotas},
	int16(kmsg.AlterClientQuotas):    {needs: "AlterConfigs on Cluster (each entity refused otherwise)", check: authAlterClientQuotas},
}

var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
	txnDenied     = kerr.TransactionalIDAuthorizationFailed.Code
)

// split keeps the items pass allows and returns the others.
func split[T any](items []T, pass func(*T) bool) (kept, denied []T) {
	kept = make([]T, 0, len(items))
	for i := range items {
		if pass(&items[i]) {
			kept = append(kept, items[i])
		} else {
			denied = append(denied, items[i])
		}
	}
	return kept, denied
}

func authProduce(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.ProduceRequest)
	code := topicDenied
	// As Kafka's handleProduceRequest: a request with a transactional
	// batch needs a transactional id and Write on it, or is refused whole
	// (a batch of another producer's transaction is refused in apply).
	txnOK := !hasTransactionalBatch(r) || r.TransactionID != nil && a.txn(acl.OpWrite, *r.TransactionID)
	if !txnOK {
		code = txnDenied
	}
	kept, denied := split(r.Topics, func(t *kmsg.ProduceRequestTopic) bool { return txnOK && a.topic(acl.OpWrite, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	refuse := func(resp *kmsg.ProduceResponse) {
		for _, t := range denied {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if len(kept) == 0 && r.Acks != 0 {
		resp := kmsg.NewPtrProduceResponse()
		refuse(resp)
		return resp, nil
	}
	return nil, func(resp kmsg.Response) { refuse(resp.(*kmsg.ProduceResponse)) }
}

func authListOffsets(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.ListOffsetsRequest)
	kept, denied := split(r.Topics, func(t *kmsg.ListOffsetsRequestTopic) bool { return a.topic(acl.OpDescribe, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range denied {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, topicDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
	}
}

func authOffsetForLeaderEpoch(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.OffsetForLeaderEpochRequest)
	replica := r.Version >= 3 && r.ReplicaID >= 0
	kept, denied := split(r.Topics, func(t *kmsg.OffsetForLeaderEpochRequestTopic) bool {
		if replica {
			return a.cluster(acl.OpClusterAction)
		}
		return a.topic(acl.OpDescribe, t.Topic)
	})
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, topicDenied
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	}
}

func authCreateTopics(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.CreateTopicsRequest)
	clusterOK := a.cluster(acl.OpCreate)
	kept, denied := split(r.Topics, func(t *kmsg.CreateTopicsRequestTopic) bool { return clusterOK || a.topic(acl.OpCreate, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range denied {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, topicDenied
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
	}
}

func authDeleteTopics(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DeleteTopicsRequest)
	keptNames, deniedNames := split(r.TopicNames, func(n *string) bool { return a.topic(acl.OpDelete, *n) })
	kept, denied := split(r.Topics, func(t *kmsg.DeleteTopicsRequestTopic) bool {
		if t.Topic != nil {
			return a.topic(acl.OpDelete, *t.Topic)
		}
		name, ok := b.store.TopicNameByID(t.TopicID)
		return !ok || a.topic(acl.OpDelete, name) // an unknown id is answered as unknown
	})
	if len(deniedNames) == 0 && len(denied) == 0 {
		return nil, nil
	}
	r.TopicNames, r.Topics = keptNames, kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteTopicsResponse)
		for _, n := range deniedNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = &n, topicDenied
			dr.Topics = append(dr.Topics, rt)
		}
		for _, t := range denied {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, topicDenied
			dr.Topics = append(dr.Topics, rt)
		}
	}
}

func authCreatePartitions(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.CreatePartitionsRequest)
	kept, denied := split(r.Topics, func(t *kmsg.CreatePartitionsRequestTopic) bool { return a.topic(acl.OpAlter, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range denied {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, topicDenied
			cr.Topics = append(cr.Topics, rt)
		}
	}
}

// configResource authorizes op on a config resource: a topic, or (a
// broker or broker logger) the cluster. It returns the refusal's code.
func configResource(a *authCtx, op acl.Operation, typ kmsg.ConfigResourceType, name string) (bool, int16) {
	if typ == kmsg.ConfigResourceTypeTopic {
		return a.topic(op, name), topicDenied
	}
	return a.cluster(op), clusterDenied
}

// splitConfigResources takes the config resources op is refused on out of
// a Describe/Alter/IncrementalAlterConfigs request, with each refusal's
// code; the three requests differ only in their types.
func splitConfigResources[T any](a *authCtx, op acl.Operation, items *[]T, key func(*T) (kmsg.ConfigResourceType, string)) (denied []T, codes []int16) {
	kept, denied := split(*items, func(c *T) bool {
		typ, name := key(c)
		ok, code := configResource(a, op, typ, name)
		if !ok {
			codes = append(codes, code)
		}
		return ok
	})
	if len(denied) > 0 {
		*items = kept
	}
	return denied, codes
}

func authDescribeConfigs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DescribeConfigsRequest)
	denied, codes := splitConfigResources(a, acl.OpDescribeConfigs, &r.Resources, func(c *kmsg.DescribeConfigsRequestResource) (kmsg.ConfigResourceType, string) {
		return c.ResourceType, c.ResourceName
	})
	if len(denied) == 0 {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeConfigsResponse)
		for i, c := range denied {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = c.ResourceType, c.ResourceName, codes[i]
			dr.Resources = append(dr.Resources, rr)
		}
	}
}

func authAlterConfigs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.AlterConfigsRequest)
	denied, codes := splitConfigResources(a, acl.OpAlterConfigs, &r.Resources, func(c *kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
		return c.ResourceType, c.ResourceName
	})
	if len(denied) == 0 {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) {
		ar := resp.(*kmsg.AlterConfigsResponse)
		for i, c := range denied {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = c.ResourceType, c.ResourceName, codes[i]
			ar.Resources = append(ar.Resources, rr)
		}
	}
}

func authIncrementalAlterConfigs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.IncrementalAlterConfigsRequest)
	denied, codes := splitConfigResources(a, acl.OpAlterConfigs, &r.Resources, func(c *kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
		return c.ResourceType, c.ResourceName
	})
	if len(denied) == 0 {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) {
		ar := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for i, c := range denied {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = c.ResourceType, c.ResourceName, codes[i]
			ar.Resources = append(ar.Resources, rr)
		}
	}
}

func authDeleteRecords(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DeleteRecordsRequest)
	kept, denied := split(r.Topics, func(t *kmsg.DeleteRecordsRequestTopic) bool { return a.topic(acl.OpDelete, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteRecordsResponse)
		for _, t := range denied {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, topicDenied, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	}
}

func authDescribeLogDirs(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpDescribe) {
		return nil, nil
	}
	// Kafka answers no directories (and, v3+, the error).
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	resp.ErrorCode = clusterDenied
	return resp, nil
}

func authInitProducerID(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.InitProducerIDRequest)
	var code int16
	switch {
	case r.TransactionalID != nil:
		if !a.txn(acl.OpWrite, *r.TransactionalID) {
			code = txnDenied
		}
	case a.cluster(acl.OpIdempotentWrite):
	case a.index.AuthorizeAny(a.policy, a.who, acl.OpWrite, acl.ResourceTopic):
	default:
		code = clusterDenied
	}
	if code == 0 {
		return nil, nil
	}
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	return resp, nil
}

func authFindCoordinator(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.FindCoordinatorRequest)
	allowed := func(key string) (bool, int16) {
		switch r.CoordinatorType {
		case coordinatorTypeGroup:
			return a.group(acl.OpDescribe, key), groupDenied
		case coordinatorTypeTransaction:
			return a.txn(acl.OpDescribe, key), txnDenied
		}
		return true, 0 // the handler refuses an unknown type
	}
	if r.Version < 4 {
		if ok, code := allowed(r.CoordinatorKey); !ok {
			resp := kmsg.NewPtrFindCoordinatorResponse()
			resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
			return resp, nil
		}
		return nil, nil
	}
	var codes []int16
	kept, denied := split(r.CoordinatorKeys, func(k *string) bool {
		ok, code := allowed(*k)
		if !ok {
			codes = append(codes, code)
		}
		return ok
	})
	if len(denied) == 0 {
		return nil, nil
	}
	r.CoordinatorKeys = kept
	return nil, func(resp kmsg.Response) {
		fr := resp.(*kmsg.FindCoordinatorResponse)
		for i, k := range denied {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = k, codes[i], -1, -1
			fr.Coordinators = append(fr.Coordinators, c)
		}
	}
}

func authJoinGroup(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.JoinGroupRequest)
	if a.group(acl.OpRead, r.Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode, resp.Generation, resp.MemberID = groupDenied, -1, r.MemberID
	return resp, nil
}

func authSyncGroup(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.group(acl.OpRead, msg.(*kmsg.SyncGroupRequest).Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = groupDenied
	return resp, nil
}

func authHeartbeat(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.group(acl.OpRead, msg.(*kmsg.HeartbeatRequest).Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = groupDenied
	return resp, nil
}

func authLeaveGroup(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.group(acl.OpRead, msg.(*kmsg.LeaveGroupRequest).Group) {
		return nil, nil
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.ErrorCode = groupDenied
	return resp, nil
}

func authOffsetCommit(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.OffsetCommitRequest)
	groupOK := a.group(acl.OpRead, r.Group)
	kept, denied := split(r.Topics, func(t *kmsg.OffsetCommitRequestTopic) bool { return groupOK && a.topic(acl.OpRead, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	code := topicDenied
	if !groupOK {
		code = groupDenied
	}
	refuse := func(resp *kmsg.OffsetCommitResponse) {
		for _, t := range denied {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if !groupOK {
		resp := kmsg.NewPtrOffsetCommitResponse()
		refuse(resp)
		return resp, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) { refuse(resp.(*kmsg.OffsetCommitResponse)) }
}

func authOffsetDelete(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.OffsetDeleteRequest)
	if !a.group(acl.OpDelete, r.Group) {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.ErrorCode = groupDenied
		return resp, nil
	}
	kept, denied := split(r.Topics, func(t *kmsg.OffsetDeleteRequestTopic) bool { return a.topic(acl.OpRead, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetDeleteResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, topicDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	}
}

func authDescribeGroups(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DescribeGroupsRequest)
	kept, denied := split(r.Groups, func(g *string) bool { return a.group(acl.OpDescribe, *g) })
	r.Groups = kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		if r.IncludeAuthorizedOperations {
			for i := range dr.Groups {
				dr.Groups[i].AuthorizedOperations = a.operations(acl.ResourceGroup, dr.Groups[i].Group, groupOps)
			}
		}
		for _, g := range denied {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupDenied
			dr.Groups = append(dr.Groups, rg)
		}
	}
}

// groupOps are the operations Kafka reports on a group.
var groupOps = []acl.Operation{acl.OpRead, acl.OpDelete, acl.OpDescribe}

func authListGroups(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpDescribe) {
		return nil, nil
	}
	return nil, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListGroupsResponse)
		lr.Groups, _ = split(lr.Groups, func(g *kmsg.ListGroupsResponseGroup) bool { return a.group(acl.OpDescribe, g.Group) })
	}
}

func authDeleteGroups(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DeleteGroupsRequest)
	kept, denied := split(r.Groups, func(g *string) bool { return a.group(acl.OpDelete, *g) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Groups = kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range denied {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupDenied
			dr.Groups = append(dr.Groups, rg)
		}
	}
}

func authAddPartitionsToTxn(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.AddPartitionsToTxnRequest)
	txnOK := a.txn(acl.OpWrite, r.TransactionalID)
	denied := map[string]bool{}
	for _, t := range r.Topics {
		if !txnOK || !a.topic(acl.OpWrite, t.Topic) {
			denied[t.Topic] = true
		}
	}
	if len(denied) == 0 {
		return nil, nil
	}
	// As Kafka: nothing is added; the refused topics carry their code,
	// the others OPERATION_NOT_ATTEMPTED.
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		code := kerr.OperationNotAttempted.Code
		switch {
		case !txnOK:
			code = txnDenied
		case denied[t.Topic]:
			code = topicDenied
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func authAddOffsetsToTxn(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.AddOffsetsToTxnRequest)
	var code int16
	switch {
	case !a.txn(acl.OpWrite, r.TransactionalID):
		code = txnDenied
	case !a.group(acl.OpRead, r.Group):
		code = groupDenied
	default:
		return nil, nil
	}
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.ErrorCode = code
	return resp, nil
}

func authEndTxn(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.txn(acl.OpWrite, msg.(*kmsg.EndTxnRequest).TransactionalID) {
		return nil, nil
	}
	resp := kmsg.NewPtrEndTxnResponse()
	resp.ErrorCode = txnDenied
	return resp, nil
}

func authTxnOffsetCommit(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.TxnOffsetCommitRequest)
	whole := int16(0)
	switch {
	case !a.txn(acl.OpWrite, r.TransactionalID):
		whole = txnDenied
	case !a.group(acl.OpRead, r.Group):
		whole = groupDenied
	}
	kept, denied := split(r.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) bool { return whole == 0 && a.topic(acl.OpRead, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	code := topicDenied
	if whole != 0 {
		code = whole
	}
	refuse := func(resp *kmsg.TxnOffsetCommitResponse) {
		for _, t := range denied {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if whole != 0 {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		refuse(resp)
		return resp, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) { refuse(resp.(*kmsg.TxnOffsetCommitResponse)) }
}

func authDescribeProducers(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DescribeProducersRequest)
	kept, denied := split(r.Topics, func(t *kmsg.DescribeProducersRequestTopic) bool { return a.topic(acl.OpRead, t.Topic) })
	if len(denied) == 0 {
		return nil, nil
	}
	r.Topics = kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeProducersResponse)
		for _, t := range denied {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, topicDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	}
}

func authDescribeTransactions(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.DescribeTransactionsRequest)
	kept, denied := split(r.TransactionalIDs, func(id *string) bool { return a.txn(acl.OpDescribe, *id) })
	r.TransactionalIDs = kept
	return nil, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeTransactionsResponse)
		// As Kafka: the partitions of topics the principal may not
		// Describe are left out.
		for i := range dr.TransactionStates {
			s := &dr.TransactionStates[i]
			s.Topics, _ = split(s.Topics, func(t *kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return a.topic(acl.OpDescribe, t.Topic)
			})
		}
		for _, id := range denied {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, txnDenied
			dr.TransactionStates = append(dr.TransactionStates, s)
		}
	}
}

func authListTransactions(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	return nil, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListTransactionsResponse)
		lr.TransactionStates, _ = split(lr.TransactionStates, func(s *kmsg.ListTransactionsResponseTransactionState) bool {
			return a.txn(acl.OpDescribe, s.TransactionalID)
		})
	}
}

func authDescribeClientQuotas(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpDescribeConfigs) {
		return nil, nil
	}
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	resp.ErrorCode = clusterDenied
	return resp, nil
}

// authAlterClientQuotas: AlterConfigs on Cluster, or each entity is
// answered CLUSTER_AUTHORIZATION_FAILED, as Kafka does.
func authAlterClientQuotas(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpAlterConfigs) {
		return nil, nil
	}
	r := msg.(*kmsg.AlterClientQuotasRequest)
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = clusterDenied
		for _, p := range e.Entity {
			we := kmsg.NewAlterClientQuotasResponseEntryEntity()
			we.Type, we.Name = p.Type, p.Name
			re.Entity = append(re.Entity, we)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}
