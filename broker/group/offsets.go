package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ValidateCommit decides whether an OffsetCommit may go ahead. A commit
// with generation -1, no member id and no instance id comes from a client
// that manages partitions itself; it is allowed while the group has no
// members. Any other commit must come from a current member of the current
// generation, and not while the group waits for its assignment. hasOffsets
// tells whether the group has committed offsets (a group Kafka would still
// know); it is only called for a group not in memory.
func (c *Coordinator) ValidateCommit(groupID string, generation int32, memberID string, instanceID *string, hasOffsets func() bool) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return err
	}
	simple := generation < 0 && memberID == "" && instanceID == nil
	g := c.groups[groupID]
	if g == nil {
		switch {
		case simple:
			return nil
		case generation < 0 || hasOffsets():
			return kerr.UnknownMemberID
		default:
			// A commit from an older generation of a group this
			// coordinator never saw (it took over since).
			return kerr.IllegalGeneration
		}
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if simple {
		if g.state != Empty {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := g.members[memberID]
	switch {
	case g.fenced(instanceID, memberID):
		return kerr.FencedInstanceID
	case m == nil:
		return kerr.UnknownMemberID
	case generation != g.generation:
		return kerr.IllegalGeneration
	case g.state == CompletingRebalance, generation != g.durableGen:
		// A generation whose record is not durable (its rebalance was
		// cut short, or the write failed) may be handed out again after
		// a coordinator move: nobody commits in it.
		return kerr.RebalanceInProgress
	}
	m.heartbeat(c.cfg.Clock.Now())
	return nil
}

// OffsetDeleteCheck decides whether OffsetDelete may delete a group's
// offsets: a group-wide error, or a function that reports, per topic,
// whether a live member consumes it (GROUP_SUBSCRIBED_TO_TOPIC). A group
// with members that is not a consumer group cannot have offsets deleted
// (NON_EMPTY_GROUP).
func (c *Coordinator) OffsetDeleteCheck(groupID string, hasOffsets bool) (func(topic string) bool, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.statusErr(); err != nil {
		return nil, err
	}
	none := func(string) bool { return false }
	g := c.groups[groupID]
	switch {
	case g == nil && !hasOffsets:
		return nil, kerr.GroupIDNotFound
	case g == nil:
		return none, nil
	case g.state == Dead:
		return nil, kerr.GroupIDNotFound
	case len(g.members) == 0:
		return none, nil
	case g.protocolType != consumerProtocolType:
		return nil, kerr.NonEmptyGroup
	}
	subscribed := map[string]bool{}
	return func(topic string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		s, ok := subscribed[topic]
		if !ok {
			s = g.subscribedTo(topic)
			subscribed[topic] = s
		}
		return s
	}, nil
}

// ExpirableGroups returns the groups among those with offsets whose
// offsets may expire under offsets.retention.minutes: groups that have been
// empty for the whole retention period. A group known only by its offsets
// counts as empty since this coordinator became active (it cannot know
// better, and waiting longer never loses an offset a group still needs).
// Nothing is expirable unless the coordinator is active.
func (c *Coordinator) ExpirableGroups(offsetGroups []string, retention time.Duration) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != active {
		return nil
	}
	now := c.cfg.Clock.Now()
	var out []string
	for _, id := range offsetGroups {
		since := c.activeSince
		if g := c.groups[id]; g != nil {
			if g.state != Empty || len(g.pending) > 0 {
				continue
			}
			since = g.emptySince
		}
		if now.Sub(since) >= retention {
			out = append(out, id)
		}
	}
	return out
}

// Sweep forgets empty groups that have no committed offsets, as Kafka's
// periodic group cleanup does.
func (c *Coordinator) Sweep(hasOffsets func(group string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != active {
		return
	}
	for id, g := range c.groups {
		if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 && !hasOffsets(id) {
			delete(c.groups, id)
			if g.generation > 0 {
				g.store(true, nil)
			}
		}
	}
}
