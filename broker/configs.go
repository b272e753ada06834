package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/raftstore"
	"github.com/brokerd/brokerd/topic"
)

// topicConfigEntries describes a topic's effective configs.
func (b *Broker) topicConfigEntries(overrides map[string]string, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	res := topic.Resolve(overrides, b.defaults())
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, e := range res.Entries() {
		if names != nil && !slices.Contains(names, e.Name) {
			continue
		}
		def, _ := topic.Lookup(e.Name)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := e.Value
		c.Name, c.Value = e.Name, &v
		c.ReadOnly = def.ReadOnly
		c.Source = kmsg.ConfigSource(e.Source)
		c.IsDefault = e.Source == topic.Default
		c.ConfigType = kmsg.ConfigType(def.Type)
		if docs {
			d := def.Doc
			c.Documentation = &d
		}
		if synonyms {
			for _, s := range res.Synonyms(e.Name) {
				sv := s.Value
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: s.Name, Value: &sv, Source: kmsg.ConfigSource(s.Source)})
			}
		}
		out = append(out, c)
	}
	return out
}

// brokerConfigEntries describes the broker-level settings that shape topics.
func (b *Broker) brokerConfigEntries(names []string) []kmsg.DescribeConfigsResponseResourceConfig {
	static := map[string]string{
		"broker.id":                  strconv.Itoa(int(b.cfg.NodeID)),
		"node.id":                    strconv.Itoa(int(b.cfg.NodeID)),
		"log.dirs":                   b.cfg.DataDir,
		"num.partitions":             strconv.Itoa(int(b.cfg.NumPartitions)),
		"default.replication.factor": strconv.Itoa(int(b.cfg.DefaultReplicationFactor)),
		"auto.create.topics.enable":  strconv.FormatBool(b.cfg.AutoCreateTopics),
	}
	res := topic.Resolve(nil, b.defaults())
	for _, d := range topic.Defs() {
		if d.BrokerKey == "" {
			continue
		}
		if _, ok := static[d.BrokerKey]; !ok {
			v, _ := res.Get(d.Name)
			static[d.BrokerKey] = v
		}
	}
	keys := make([]string, 0, len(static))
	for k := range static {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range keys {
		if names != nil && !slices.Contains(names, k) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := static[k]
		c.Name, c.Value, c.ReadOnly = k, &v, true
		c.Source = kmsg.ConfigSourceStaticBrokerConfig
		out = append(out, c)
	}
	return out
}

func (b *Broker) describeConfigs(r *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range r.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := b.lookupTopic(rr.ResourceName)
			if !ok {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			sr.Configs = b.topicConfigEntries(t.Configs, rr.ConfigNames, r.IncludeSynonyms, r.IncludeDocumentation)
		case kmsg.ConfigResourceTypeBroker:
			if err := b.checkBrokerResource(rr.ResourceName); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
				break
			}
			sr.Configs = b.brokerConfigEntries(rr.ConfigNames)
		default:
			err := fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, rr.ResourceType)
			sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.cfg.NodeID)) {
		return nil
	}
	return fmt.Errorf("%w: broker %q is not this broker (%d)", kerr.InvalidRequest, name, b.cfg.NodeID)
}

// errReadOnlyBroker answers attempts to change broker configs at run time.
var errReadOnlyBroker = fmt.Errorf("%w: broker configs are static; set them in the config file, environment or flags", kerr.InvalidRequest)

func (b *Broker) alterConfigs(ctx context.Context, r *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterConfigsResponse()
	for _, rr := range r.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			set := map[string]string{}
			for _, c := range rr.Configs {
				if c.Value != nil {
					set[c.Name] = *c.Value
				}
			}
			err = b.alterTopic(ctx, rr.ResourceName, true, set, nil, r.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			err = errReadOnlyBroker
		default:
			err = fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, rr.ResourceType)
		}
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *Broker) incrementalAlterConfigs(ctx context.Context, r *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, rr := range r.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.incrementalTopic(ctx, rr, r.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			err = errReadOnlyBroker
		default:
			err = fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, rr.ResourceType)
		}
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// incrementalTopic applies SET, DELETE, APPEND and SUBTRACT operations.
func (b *Broker) incrementalTopic(ctx context.Context, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if topic.IsInternal(rr.ResourceName) {
		return internalTopicWrite(rr.ResourceName, "alter the configs of")
	}
	t, ok := b.store.Topic(rr.ResourceName)
	if !ok {
		return fmt.Errorf("%w: %s", raftstore.ErrUnknownTopic, rr.ResourceName)
	}
	res := topic.Resolve(t.Configs, b.defaults())
	set := map[string]string{}
	var del []string
	for _, c := range rr.Configs {
		def, known := topic.Lookup(c.Name)
		if !known {
			return fmt.Errorf("%w: %s", topic.ErrUnknownConfig, c.Name)
		}
		val := ""
		if c.Value != nil {
			val = *c.Value
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: SET %s without a value", topic.ErrInvalidConfig, c.Name)
			}
			set[c.Name] = val
		case kmsg.IncrementalAlterConfigOpDelete:
			del = append(del, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if def.Type != topic.List {
				return fmt.Errorf("%w: %s is not a list; APPEND and SUBTRACT need one", topic.ErrInvalidConfig, c.Name)
			}
			cur := res.List(c.Name)
			if v, ok := set[c.Name]; ok {
				cur = splitList(v)
			}
			set[c.Name] = strings.Join(editList(cur, splitList(val), c.Op == kmsg.IncrementalAlterConfigOpAppend), ",")
		default:
			return fmt.Errorf("%w: unknown operation %d on %s", kerr.InvalidRequest, c.Op, c.Name)
		}
	}
	return b.alterTopic(ctx, rr.ResourceName, false, set, del, validateOnly)
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func editList(cur, items []string, add bool) []string {
	out := slices.Clone(cur)
	for _, it := range items {
		i := slices.Index(out, it)
		switch {
		case add && i < 0:
			out = append(out, it)
		case !add && i >= 0:
			out = slices.Delete(out, i, i+1)
		}
	}
	return out
}

// alterTopic validates the resulting override set, then proposes it.
func (b *Broker) alterTopic(ctx context.Context, name string, replace bool, set map[string]string, del []string, validateOnly bool) error {
	if topic.IsInternal(name) {
		return internalTopicWrite(name, "alter the configs of")
	}
	t, ok := b.store.Topic(name)
	if !ok {
		return fmt.Errorf("%w: %s", raftstore.ErrUnknownTopic, name)
	}
	next := map[string]string{}
	if !replace {
		for k, v := range t.Configs {
			next[k] = v
		}
	}
	for k, v := range set {
		next[k] = v
	}
	for _, k := range del {
		delete(next, k)
	}
	if err := topic.ValidateConfigs(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	return b.store.AlterConfigs(ctx, name, replace, set, del)
}
