package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// authDescribeUserScram: Describe on Cluster, as Kafka; refused, the whole
// request gets CLUSTER_AUTHORIZATION_FAILED.
func authDescribeUserScram(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpDescribe) {
		return nil, nil
	}
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	resp.ErrorCode = clusterDenied
	return resp, nil
}

// authAlterUserScram: Alter on Cluster, as Kafka; refused, every user of
// the request gets CLUSTER_AUTHORIZATION_FAILED and nothing changes.
func authAlterUserScram(b *Broker, a *authCtx, msg kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	if a.cluster(acl.OpAlter) {
		return nil, nil
	}
	r := msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		res.ErrorCode = clusterDenied
		resp.Results = append(resp.Results, res)
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
	return resp, nil
}
