package topic

import (
	"fmt"
	"maps"
	"slices"
)

// Defaults holds broker-level defaults for topic configs, keyed by the
// TOPIC config name (e.g. "retention.ms": "3600000"), not the broker key.
// DefaultsFromBroker builds one from broker config keys.
type Defaults map[string]string

// Validate checks every entry as ValidateConfigs checks overrides, in
// sorted key order, except that keys are not checked against one another.
func (d Defaults) Validate() error {
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if err := validateOne(k, d[k]); err != nil {
			return fmt.Errorf("broker default: %w", err)
		}
	}
	return nil
}

// Resolved is a topic's effective configs. Its zero value resolves every
// config to Kafka's default. It does not change once made, and is safe for
// concurrent use.
type Resolved struct {
	overrides map[string]string // valid topic overrides, normalized
	broker    map[string]string // valid broker defaults, normalized
}

// Resolve combines a topic's overrides with broker defaults: an override
// wins over the broker default, which wins over Kafka's default. Unknown
// keys and invalid values are skipped, so the next source supplies the
// value: Resolve never fails, and the typed getters never see a value they
// cannot parse. Check overrides with ValidateConfigs (and defaults with
// Defaults.Validate) before storing them. Resolve copies what it keeps.
func Resolve(overrides map[string]string, d Defaults) Resolved {
	return Resolved{overrides: keepValid(overrides), broker: keepValid(d)}
}

func keepValid(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if validateOne(k, v) != nil {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m))
		}
		out[k] = normalize(v)
	}
	return out
}

// Get returns the effective value of the config called name and where it
// comes from. For a name that is not a topic config it returns "" and
// SourceUnknown.
func (r Resolved) Get(name string) (value string, source Source) {
	def, ok := byName[name]
	if !ok {
		return "", SourceUnknown
	}
	if v, ok := r.overrides[name]; ok {
		return v, DynamicTopic
	}
	if v, ok := r.broker[name]; ok {
		return v, StaticBroker
	}
	return def.Default, Default
}

// Entry is one config's effective value.
type Entry struct {
	Name   string
	Value  string
	Source Source
}

// Entries returns the effective value of every topic config, sorted by name.
func (r Resolved) Entries() []Entry {
	out := make([]Entry, len(defs))
	for i, def := range defs {
		v, src := r.Get(def.Name)
		out[i] = Entry{Name: def.Name, Value: v, Source: src}
	}
	return out
}

// Overrides returns a copy of the topic overrides that took part in the
// resolution (those with a known key and a valid value), normalized.
func (r Resolved) Overrides() map[string]string {
	return maps.Clone(r.overrides)
}

// Synonym is one source that supplies a value for a config, in the shape of
// a DescribeConfigs synonym.
type Synonym struct {
	Name   string // the topic config name for DynamicTopic, else the broker key
	Value  string
	Source Source
}

// Synonyms returns every source that has a value for the config called
// name, highest precedence first; the first one is the effective value. It
// returns nil for a name that is not a topic config.
func (r Resolved) Synonyms(name string) []Synonym {
	def, ok := byName[name]
	if !ok {
		return nil
	}
	var out []Synonym
	if v, ok := r.overrides[name]; ok {
		out = append(out, Synonym{Name: name, Value: v, Source: DynamicTopic})
	}
	if v, ok := r.broker[name]; ok {
		out = append(out, Synonym{Name: def.BrokerKey, Value: v, Source: StaticBroker})
	}
	return append(out, Synonym{Name: def.BrokerKey, Value: def.Default, Source: Default})
}
