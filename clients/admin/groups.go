package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrGroupsUnsupported is returned when the cluster does not advertise the
// consumer-group APIs.
var ErrGroupsUnsupported = errors.New("the cluster does not support consumer groups")

// ErrGroupNotFound is returned by DescribeGroup for a group that has no
// members and no committed offsets.
var ErrGroupNotFound = errors.New("no such group")

// groupAPIs are the requests the group commands send.
var groupAPIs = []kmsg.Key{kmsg.FindCoordinator, kmsg.ListGroups, kmsg.DescribeGroups,
	kmsg.OffsetFetch, kmsg.OffsetCommit, kmsg.DeleteGroups}

// CheckGroupSupport asks every broker for its API versions and returns an
// error wrapping ErrGroupsUnsupported, naming the missing APIs, unless all
// of them advertise the consumer-group APIs.
func (c *Client) CheckGroupSupport(ctx context.Context) error {
	vs, err := c.adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	missing := map[string]bool{}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return fmt.Errorf("api versions from node %d: %w", v.NodeID, v.Err)
		}
		for _, k := range groupAPIs {
			if _, ok := v.KeyMaxVersion(int16(k)); !ok {
				missing[k.Name()] = true
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var names []string
	for _, k := range groupAPIs {
		if missing[k.Name()] {
			names = append(names, k.Name())
		}
	}
	return fmt.Errorf("%w (not advertised: %s)", ErrGroupsUnsupported, strings.Join(names, ", "))
}

// GroupSummary is one line of a group listing.
type GroupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// ListGroups lists every group, sorted by name.
func (c *Client) ListGroups(ctx context.Context) ([]GroupSummary, error) {
	if err := c.CheckGroupSupport(ctx); err != nil {
		return nil, err
	}
	gs, err := c.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]GroupSummary, 0, len(gs))
	for _, g := range gs.Sorted() {
		out = append(out, GroupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	return out, nil
}

// GroupDescription is a group, its members and, per partition, its
// committed offset and lag.
type GroupDescription struct {
	Group        string        `json:"group"`
	Coordinator  int32         `json:"coordinator"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type"`
	Protocol     string        `json:"protocol"`
	Members      []GroupMember `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	// TotalLag sums the lag of the partitions whose lag is known.
	TotalLag int64 `json:"total_lag"`
}

// GroupMember is one member of a group.
type GroupMember struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
}

// GroupOffset is one partition's row in `group describe`, as
// kafka-consumer-groups.sh --describe prints it. CurrentOffset is -1 when
// nothing is committed and Lag -1 when it cannot be computed; the member
// fields are empty when no member owns the partition.
type GroupOffset struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	ConsumerID    string `json:"consumer_id,omitempty"`
	Host          string `json:"host,omitempty"`
	ClientID      string `json:"client_id,omitempty"`
	Error         string `json:"error,omitempty"`
}

// DescribeGroup describes a group with its lag per partition.
func (c *Client) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	if err := c.CheckGroupSupport(ctx); err != nil {
		return GroupDescription{}, err
	}
	lags, err := c.adm.Lag(ctx, group)
	if err != nil {
		return GroupDescription{}, fmt.Errorf("describe group %s: %w", group, err)
	}
	l, ok := lags[group]
	if !ok {
		return GroupDescription{}, fmt.Errorf("describe group %s: not in the response", group)
	}
	if err := l.Error(); err != nil {
		return GroupDescription{}, fmt.Errorf("describe group %s: %w", group, err)
	}
	if l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0 {
		return GroupDescription{}, fmt.Errorf("describe group %s: %w", group, ErrGroupNotFound)
	}
	d := GroupDescription{
		Group: group, Coordinator: l.Coordinator.NodeID, State: l.State,
		ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Members: []GroupMember{}, Offsets: []GroupOffset{},
	}
	for _, m := range l.Members {
		gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		d.Members = append(d.Members, gm)
	}
	for _, ml := range l.Lag.Sorted() {
		o := GroupOffset{
			Topic: ml.Topic, Partition: ml.Partition, CurrentOffset: ml.Commit.At,
			LogEndOffset: ml.End.Offset, Lag: ml.Lag,
		}
		if ml.Commit.At < 0 {
			o.CurrentOffset = -1
		}
		if ml.End.Err != nil {
			o.LogEndOffset = -1
		}
		if ml.Member != nil {
			o.ConsumerID, o.Host, o.ClientID = ml.Member.MemberID, ml.Member.ClientHost, ml.Member.ClientID
		}
		if ml.Err != nil {
			o.Error = ml.Err.Error()
		}
		if o.Lag > 0 {
			d.TotalLag += o.Lag
		}
		d.Offsets = append(d.Offsets, o)
	}
	return d, nil
}

// DeleteGroup deletes a group and its committed offsets. The group must
// have no members.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	if err := c.CheckGroupSupport(ctx); err != nil {
		return err
	}
	r, err := c.adm.DeleteGroup(ctx, group)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		if r.ErrMessage != "" {
			return fmt.Errorf("delete group %s: %w: %s", group, err, r.ErrMessage)
		}
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}
