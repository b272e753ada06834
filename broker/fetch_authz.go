package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/fetchsession"
	"github.com/brokerd/brokerd/raftstore/acl"
)

// fetchDenied authorizes the partitions a Fetch reads: every partition of
// its session, not only those the request names, and on every request, as
// Kafka's handleFetchRequest does (a session outlives the ACL that let it
// read). A consumer needs Read on each topic; a replica fetch needs
// ClusterAction on the cluster. denied[i] refuses parts[i]; nil refuses
// nothing, and is all an authorizer that is off costs. A topic id that
// names no topic is not refused here: the read answers UNKNOWN_TOPIC_ID,
// as Kafka does before it authorizes.
func fetchDenied(a *authCtx, r *kmsg.FetchRequest, parts []fetchsession.Partition, names map[[16]byte]string) (denied []bool, all bool) {
	if a == nil || len(parts) == 0 {
		return nil, false
	}
	if r.ReplicaID >= 0 {
		if a.cluster(acl.OpClusterAction) {
			return nil, false
		}
		denied = make([]bool, len(parts))
		for i := range denied {
			denied[i] = true
		}
		return denied, true
	}
	// One verdict per topic: a session's partitions of one topic are
	// usually adjacent, and a topic's many partitions cost one lookup.
	var (
		last             string
		haveLast, lastOK bool
		verdicts         map[string]bool
		n                int
	)
	for i, p := range parts {
		name := p.Topic
		if r.Version >= 13 {
			var known bool
			if name, known = names[p.ID]; !known {
				continue
			}
		}
		ok := lastOK
		if !haveLast || name != last {
			var seen bool
			if ok, seen = verdicts[name]; !seen {
				ok = a.topic(acl.OpRead, name)
				if verdicts == nil {
					verdicts = map[string]bool{}
				}
				verdicts[name] = ok
			}
			last, lastOK, haveLast = name, ok, true
		}
		if ok {
			continue
		}
		if denied == nil {
			denied = make([]bool, len(parts))
		}
		denied[i] = true
		n++
	}
	return denied, n == len(parts)
}
