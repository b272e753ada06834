package admin

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TopicSummary is one line of a topic listing.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
}

// ListTopics lists every topic, internal ones included, sorted by name.
func (c *Client) ListTopics(ctx context.Context) ([]TopicSummary, error) {
	ts, err := c.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := make([]TopicSummary, 0, len(ts))
	for _, name := range ts.Names() {
		t := ts[name]
		if t.Err != nil {
			return nil, fmt.Errorf("list topics: %s: %w", name, t.Err)
		}
		out = append(out, TopicSummary{
			Name: name, ID: topicID(t.ID), Partitions: len(t.Partitions),
			ReplicationFactor: t.Partitions.NumReplicas(), Internal: t.IsInternal,
		})
	}
	return out, nil
}

// CreatedTopic is what CreateTopic made.
type CreatedTopic struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replication_factor"`
}

// CreateTopic creates a topic. partitions and replicationFactor of -1 take
// the broker's defaults (num.partitions, default.replication.factor).
func (c *Client) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) (CreatedTopic, error) {
	var cfg map[string]*string
	if len(configs) > 0 {
		cfg = make(map[string]*string, len(configs))
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
	}
	r, err := c.adm.CreateTopic(ctx, partitions, replicationFactor, cfg, name)
	if err != nil {
		if r.ErrMessage != "" {
			return CreatedTopic{}, fmt.Errorf("create topic %s: %w: %s", name, err, r.ErrMessage)
		}
		return CreatedTopic{}, fmt.Errorf("create topic %s: %w", name, err)
	}
	return CreatedTopic{Name: r.Topic, ID: topicID(r.ID), Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor}, nil
}

// DeleteTopic deletes a topic and its data.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	r, err := c.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		if r.ErrMessage != "" {
			return fmt.Errorf("delete topic %s: %w: %s", name, err, r.ErrMessage)
		}
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	return nil
}

// AlterTopicConfig sets and removes a topic's config overrides in one
// incremental request; a removed key falls back to the broker default.
func (c *Client) AlterTopicConfig(ctx context.Context, name string, set map[string]string, del []string) error {
	var alters []kadm.AlterConfig
	for _, k := range sortedKeys(set) {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(set[k])})
	}
	for _, k := range del {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return fmt.Errorf("alter topic %s: nothing to change", name)
	}
	rs, err := c.adm.AlterTopicConfigs(ctx, alters, name)
	if err != nil {
		return fmt.Errorf("alter topic %s: %w", name, err)
	}
	for _, r := range rs {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("alter topic %s: %w: %s", name, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("alter topic %s: %w", name, r.Err)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
