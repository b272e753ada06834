package group

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Describe describes a group for DescribeGroups. hasOffsets tells whether
// the group has committed offsets: a group known only by its offsets is
// Empty, one that is not known at all is Dead (DescribeGroups before v6
// answers that without an error).
func (c *Coordinator) Describe(groupID string, hasOffsets bool) (Description, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return Description{State: Dead.String()}, err
	}
	g := c.groups[groupID]
	if g == nil {
		if hasOffsets {
			return Description{State: Empty.String()}, nil
		}
		return Description{State: Dead.String()}, nil
	}
	d := Description{State: g.state.String(), ProtocolType: g.protocolType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata = m.metadata(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// List lists the groups for ListGroups: those in memory and those known
// only by their committed offsets (offsetGroups), which are Empty. A
// non-empty states filter keeps the groups in those states (compared
// without regard to case). Clients ask every broker and merge the answers,
// so a node that coordinates nothing (not the leader) lists nothing,
// without an error, as a Kafka broker without group partitions does.
func (c *Coordinator) List(offsetGroups []string, states []string) ([]Listing, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == inactive {
		return nil, nil
	}
	if err := c.statusErr(); err != nil {
		return nil, err
	}
	keep := func(s State) bool {
		return len(states) == 0 || slices.ContainsFunc(states, func(f string) bool { return strings.EqualFold(f, s.String()) })
	}
	var out []Listing
	for id, g := range c.groups {
		if g.state != Dead && keep(g.state) {
			out = append(out, Listing{Group: id, ProtocolType: g.protocolType, State: g.state.String()})
		}
	}
	if keep(Empty) {
		for _, id := range offsetGroups {
			if c.groups[id] == nil {
				out = append(out, Listing{Group: id, State: Empty.String()})
			}
		}
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// Delete takes a group out of the coordinator for DeleteGroups; the caller
// then deletes its offsets. Only an Empty group (or one known only by its
// offsets) can go: one with members is NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) Delete(groupID string, hasOffsets bool) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return err
	}
	g := c.groups[groupID]
	switch {
	case g == nil && !hasOffsets:
		return kerr.GroupIDNotFound
	case g == nil:
		return nil
	case g.state == Dead:
		return kerr.GroupIDNotFound
	case g.state != Empty:
		return kerr.NonEmptyGroup
	}
	g.state = Dead
	for id := range g.pending {
		delete(g.pending, id)
	}
	delete(c.groups, groupID)
	g.store(true, nil)
	c.logger.Info("group deleted", "group", groupID)
	return nil
}
