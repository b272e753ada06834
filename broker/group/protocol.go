package group

import (
	"bytes"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerProtocolType is the protocol type of Kafka consumers, whose
// metadata is a kmsg.ConsumerMemberMetadata.
const consumerProtocolType = "consumer"

// supportsProtocols reports whether a member (self, or "" for a new one)
// joining with these protocols fits the group: a group without members
// takes any non-empty protocol type and set; otherwise the protocol type must
// be the group's and one of the protocols must be supported by every other
// member.
func (g *group) supportsProtocols(self, protocolType string, protocols []Protocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for id, m := range g.members {
			if id != self && !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// selectProtocol picks the group's protocol among those every member
// supports: each member votes for the first of its own protocols that is a
// candidate, and the most votes win (ties go to the earliest member's
// preference).
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return ""
	}
	var candidates []string
	for _, p := range ms[0].protocols {
		all := true
		for _, m := range ms[1:] {
			if !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all && !slices.Contains(candidates, p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 {
		// Unreachable while joins are checked with supportsProtocols.
		return ""
	}
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// consumerTopics parses consumer-protocol metadata and returns the topics it
// subscribes to.
func consumerTopics(metadata []byte) ([]string, bool) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(metadata); err != nil {
		return nil, false
	}
	return md.Topics, true
}

// sameSubscription reports whether two metadata blobs of a member ask for
// the same thing. For consumers that is the subscribed topics: the owned
// partitions and generation that cooperative assignors add change on every
// rebalance and say nothing about what the member wants. Other protocol
// types are compared byte for byte.
func (g *group) sameSubscription(a, b []byte) bool {
	if g.protocolType == consumerProtocolType {
		ta, okA := consumerTopics(a)
		tb, okB := consumerTopics(b)
		if okA && okB {
			ta, tb = slices.Clone(ta), slices.Clone(tb)
			slices.Sort(ta)
			slices.Sort(tb)
			return slices.Equal(slices.Compact(ta), slices.Compact(tb))
		}
	}
	return bytes.Equal(a, b)
}

// subscribedTo reports whether a live member of a consumer group subscribes
// to topic. Every protocol of every member is read (they all carry the same
// subscription); metadata that does not parse counts as subscribed to
// everything, so offsets are never deleted from under a member.
func (g *group) subscribedTo(topic string) bool {
	for _, m := range g.members {
		for _, p := range m.protocols {
			topics, ok := consumerTopics(p.Metadata)
			if !ok || slices.Contains(topics, topic) {
				return true
			}
		}
	}
	return false
}
