package node

import (
	"net/http"

	"github.com/brokerd/brokerd/raftstore/acl"
)

// adminNeed is what a route of the admin API asks of its caller.
type adminNeed struct {
	// open: no authentication (liveness and readiness probes).
	open bool
	// what names the need in a 403.
	what  string
	check func(a *adminAuth, c caller, r *http.Request) bool
}

// onCluster needs one of ops on the cluster.
func onCluster(what string, ops ...acl.Operation) adminNeed {
	return adminNeed{what: what, check: func(a *adminAuth, c caller, _ *http.Request) bool {
		for _, op := range ops {
			if a.allowed(c, op, acl.ResourceCluster, acl.ClusterName) {
				return true
			}
		}
		return false
	}}
}

// adminNeeds is the admin API's authorization table, by the mux pattern a
// request matched. Changes need Alter on the cluster, as Kafka's
// CreateAcls or AlterPartitionReassignments do; what the nodes ask each
// other needs ClusterAction, Kafka's inter-broker operation; reading a
// processor's state needs Read on every topic it writes, since its state
// is what those topics are made from.
func (n *Node) adminNeeds() func(pattern string) adminNeed {
	open := adminNeed{open: true}
	alter := onCluster("needs Alter on the cluster", acl.OpAlter)
	describe := onCluster("needs Describe on the cluster", acl.OpDescribe)
	nodes := onCluster("needs ClusterAction on the cluster (a node's principal)", acl.OpClusterAction)
	table := map[string]adminNeed{
		"/healthz":                              open,
		"/readyz":                               open,
		"/metrics":                              describe,
		"GET /v1/cluster":                       onCluster("needs Describe or ClusterAction on the cluster", acl.OpDescribe, acl.OpClusterAction),
		"POST /v1/cluster/members":              alter,
		"DELETE /v1/cluster/members/{id}":       alter,
		"POST /v1/cluster/leader":               alter,
		"POST /v1/cluster/brokers":              nodes,
		"POST /v1/cluster/segments/held":        nodes,
		"POST /v1/processors":                   alter,
		"GET /v1/processors":                    describe,
		"GET /v1/processors/{name}":             n.processorNeed(true),
		"POST /v1/processors/{name}/pause":      alter,
		"POST /v1/processors/{name}/resume":     alter,
		"DELETE /v1/processors/{name}":          alter,
		"GET /v1/processors/{name}/state/{key}": n.processorNeed(false),
	}
	return func(pattern string) adminNeed {
		if nd, ok := table[pattern]; ok {
			return nd
		}
		// pprof, and any route added without an entry: operators only.
		return alter
	}
}

// processorNeed is Read on every output topic of the processor named in
// the path; orDescribe also lets Describe on the cluster read its status
// (as listing every processor does). A processor that does not exist is
// refused unless the caller may describe the cluster (then the handler
// answers 404), so that names cannot be probed.
func (n *Node) processorNeed(orDescribe bool) adminNeed {
	what := "needs Read on every output topic of the processor"
	if orDescribe {
		what += ", or Describe on the cluster"
	}
	return adminNeed{what: what, check: func(a *adminAuth, c caller, r *http.Request) bool {
		describe := a.allowed(c, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName)
		if orDescribe && describe {
			return true
		}
		p, ok := n.store.Processor(r.PathValue("name"))
		if !ok {
			return describe
		}
		for _, t := range p.Outputs {
			if !a.allowed(c, acl.OpRead, acl.ResourceTopic, t) {
				return false
			}
		}
		return len(p.Outputs) > 0 || describe
	}}
}
