package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// TopicDescription is everything `topic describe` shows.
type TopicDescription struct {
	Name       string          `json:"name"`
	ID         string          `json:"id"`
	Internal   bool            `json:"internal,omitempty"`
	Partitions []PartitionInfo `json:"partitions"`
	Configs    []ConfigEntry   `json:"configs"`
}

// PartitionInfo is one partition: its leadership and its offsets.
type PartitionInfo struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// StartOffset is the log start offset; EndOffset the high watermark.
	StartOffset int64  `json:"log_start_offset"`
	EndOffset   int64  `json:"high_watermark"`
	Error       string `json:"error,omitempty"`
}

// ConfigEntry is one topic config with where its value comes from
// (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...).
type ConfigEntry struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// DescribeTopic returns a topic's partitions, offsets and configs.
func (c *Client) DescribeTopic(ctx context.Context, name string) (TopicDescription, error) {
	ts, err := c.adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		return TopicDescription{}, fmt.Errorf("describe topic %s: %w", name, err)
	}
	t, ok := ts[name]
	if !ok {
		return TopicDescription{}, fmt.Errorf("describe topic %s: not in the metadata response", name)
	}
	if t.Err != nil {
		return TopicDescription{}, fmt.Errorf("describe topic %s: %w", name, t.Err)
	}
	starts, err := c.adm.ListStartOffsets(ctx, name)
	if err != nil {
		return TopicDescription{}, fmt.Errorf("describe topic %s: start offsets: %w", name, err)
	}
	ends, err := c.adm.ListEndOffsets(ctx, name)
	if err != nil {
		return TopicDescription{}, fmt.Errorf("describe topic %s: end offsets: %w", name, err)
	}
	d := TopicDescription{Name: name, ID: topicID(t.ID), Internal: t.IsInternal}
	for _, p := range t.Partitions.Sorted() {
		pi := PartitionInfo{
			Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), StartOffset: -1, EndOffset: -1,
		}
		var errs []string
		if p.Err != nil {
			errs = append(errs, p.Err.Error())
		}
		if o, ok := starts.Lookup(name, p.Partition); ok {
			if o.Err != nil {
				errs = append(errs, "start offset: "+o.Err.Error())
			} else {
				pi.StartOffset = o.Offset
			}
		}
		if o, ok := ends.Lookup(name, p.Partition); ok {
			if o.Err != nil {
				errs = append(errs, "end offset: "+o.Err.Error())
			} else {
				pi.EndOffset = o.Offset
			}
		}
		pi.Error = strings.Join(errs, "; ")
		d.Partitions = append(d.Partitions, pi)
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return TopicDescription{}, fmt.Errorf("describe topic %s: configs: %w", name, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return TopicDescription{}, fmt.Errorf("describe topic %s: configs: %w", name, rc.Err)
		}
		for _, cfg := range rc.Configs {
			d.Configs = append(d.Configs, ConfigEntry{
				Name: cfg.Key, Value: cfg.MaybeValue(), Source: cfg.Source.String(), Sensitive: cfg.Sensitive,
			})
		}
	}
	slices.SortFunc(d.Configs, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return d, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
