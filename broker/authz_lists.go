package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// The checks of the APIs that list what a principal may see: Metadata and
// OffsetFetch.

// topicOps are the operations Kafka reports on a topic.
var topicOps = []acl.Operation{acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDelete, acl.OpAlter, acl.OpDescribe, acl.OpDescribeConfigs, acl.OpAlterConfigs}

// clusterOps are the operations Kafka reports on the cluster.
var clusterOps = []acl.Operation{acl.OpCreate, acl.OpAlter, acl.OpDescribe, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs, acl.OpIdempotentWrite}

// authMetadata lists only the topics the principal may Describe: a topic
// asked for by name that it may not is answered TOPIC_AUTHORIZATION_FAILED.
// One that would be auto-created needs Create (on Cluster or on the topic)
// as well: the handler decides that where it creates (metadata).
func authMetadata(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.MetadataRequest)
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	var denied []string
	if !all {
		r.Topics, _ = split(r.Topics, func(t *kmsg.MetadataRequestTopic) bool {
			if t.Topic == nil {
				return true // by id: filtered from the answer below
			}
			name := *t.Topic
			ok := a.topic(acl.OpDescribe, name)
			if !ok {
				denied = append(denied, name)
			}
			return ok
		})
	}
	return nil, func(resp kmsg.Response) {
		mr := resp.(*kmsg.MetadataResponse)
		// Everything listed passes Describe: this filters "all topics",
		// topics asked for by id, and a v0 request left empty above.
		mr.Topics, _ = split(mr.Topics, func(t *kmsg.MetadataResponseTopic) bool {
			return t.Topic == nil || a.topic(acl.OpDescribe, *t.Topic)
		})
		for i := range mr.Topics {
			if t := &mr.Topics[i]; r.IncludeTopicAuthorizedOperations && t.Topic != nil {
				t.AuthorizedOperations = a.operations(acl.ResourceTopic, *t.Topic, topicOps)
			}
		}
		if r.IncludeClusterAuthorizedOperations {
			mr.AuthorizedOperations = a.operations(acl.ResourceCluster, acl.ClusterName, clusterOps)
		}
		for _, name := range denied {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = &name, topicDenied
			mr.Topics = append(mr.Topics, mt)
		}
	}
}

// authOffsetFetch needs Describe on each group (GROUP_AUTHORIZATION_FAILED)
// and Describe on each topic: a topic asked for that the principal may not
// describe is answered TOPIC_AUTHORIZATION_FAILED; with all topics asked
// for, those are left out.
func authOffsetFetch(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	r := msg.(*kmsg.OffsetFetchRequest)
	if r.Version < 8 {
		if !a.group(acl.OpDescribe, r.Group) {
			resp := kmsg.NewPtrOffsetFetchResponse()
			resp.ErrorCode = groupDenied
			for _, t := range r.Topics { // v0-1 carry the error per partition
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, groupDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}
		var denied []kmsg.OffsetFetchRequestTopic
		if r.Topics != nil {
			r.Topics, denied = split(r.Topics, func(t *kmsg.OffsetFetchRequestTopic) bool { return a.topic(acl.OpDescribe, t.Topic) })
		}
		return nil, func(resp kmsg.Response) {
			or := resp.(*kmsg.OffsetFetchResponse)
			or.Topics, _ = split(or.Topics, func(t *kmsg.OffsetFetchResponseTopic) bool { return a.topic(acl.OpDescribe, t.Topic) })
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				or.Topics = append(or.Topics, rt)
			}
		}
	}
	deniedGroups := map[string]bool{}
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for i := range r.Groups {
		g := &r.Groups[i]
		if !a.group(acl.OpDescribe, g.Group) {
			deniedGroups[g.Group] = true
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{} // nothing read for it
			continue
		}
		if g.Topics != nil {
			g.Topics, deniedTopics[g.Group] = split(g.Topics, func(t *kmsg.OffsetFetchRequestGroupTopic) bool { return a.topic(acl.OpDescribe, t.Topic) })
		}
	}
	return nil, func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetFetchResponse)
		for i := range or.Groups {
			g := &or.Groups[i]
			if deniedGroups[g.Group] {
				g.ErrorCode, g.Topics = groupDenied, nil
				continue
			}
			g.Topics, _ = split(g.Topics, func(t *kmsg.OffsetFetchResponseGroupTopic) bool { return a.topic(acl.OpDescribe, t.Topic) })
			for _, t := range deniedTopics[g.Group] {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
	}
}
