package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerd/brokerd/topic"
)

// Source is where a setting came from, in increasing precedence.
type Source int

// Sources of a setting.
const (
	SourceDefault Source = iota
	SourceFile
	SourceEnv
	SourceFlag
)

func (s Source) String() string {
	switch s {
	case SourceFile:
		return "file"
	case SourceEnv:
		return "env"
	case SourceFlag:
		return "flag"
	}
	return "default"
}

// Setting is a key's effective value and where it came from.
type Setting struct {
	Key    string
	Value  string
	Source Source
	// Origin names the place: "default", "server.properties:12",
	// "BROKERD_LOG_DIRS", "--data-dir".
	Origin string
}

// Input is one key=value given on the command line; Origin names the flag.
type Input struct {
	Key, Value, Origin string
}

// Sources are the inputs of Load.
type Sources struct {
	// File is a .properties or .yaml/.yml file; "" means none.
	File string
	// Environ is the environment ("NAME=value"), typically os.Environ().
	Environ []string
	// Flags are the keys set on the command line, in order.
	Flags []Input
}

// Config is the effective configuration.
type Config struct {
	settings      map[string]Setting
	warnings      []string
	topicDefaults topic.Defaults
}

// Load merges defaults, the file, the environment and the flags, in that
// order of precedence, and validates every key and value. All errors found
// are returned together; each is a *Error.
func Load(src Sources) (*Config, error) {
	c := &Config{settings: map[string]Setting{}}
	for _, k := range keyList {
		if k.Default != "" {
			c.settings[k.Name] = Setting{Key: k.Name, Value: k.Default, Source: SourceDefault, Origin: "default"}
		}
	}
	var errs []error
	var layers [][]Setting
	if src.File != "" {
		l, err := fileLayer(src.File)
		if err != nil {
			errs = append(errs, err)
		}
		layers = append(layers, l)
	}
	l, warnings, err := envLayer(src.Environ)
	c.warnings = warnings
	if err != nil {
		errs = append(errs, err)
	}
	layers = append(layers, l)
	l, err = flagLayer(src.Flags)
	if err != nil {
		errs = append(errs, err)
	}
	layers = append(layers, l)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, l := range layers {
		c.merge(l)
	}
	td, err := topic.DefaultsFromBroker(c.topicProps())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadValue, err)
	}
	c.topicDefaults = td
	return c, nil
}

// merge applies one source over the settings so far. A family member set
// here hides the members of the same family set by earlier sources.
func (c *Config) merge(layer []Setting) {
	families := map[string]bool{}
	for _, s := range layer {
		if f := keyMap[s.Key].Family; f != "" {
			families[f] = true
		}
	}
	for k := range c.settings {
		if families[keyMap[k].Family] {
			delete(c.settings, k)
		}
	}
	for _, s := range layer {
		c.settings[s.Key] = s
	}
}

func (c *Config) topicProps() map[string]string {
	out := map[string]string{}
	for k, s := range c.settings {
		if keyMap[k].Topic {
			out[k] = strings.TrimSpace(s.Value)
		}
	}
	return out
}

// Get returns a key's setting; ok is false for a key that is neither set
// nor defaulted.
func (c *Config) Get(key string) (Setting, bool) {
	s, ok := c.settings[key]
	return s, ok
}

// String returns a key's value, "" when unset.
func (c *Config) String(key string) string { return strings.TrimSpace(c.settings[key].Value) }

// Int returns a key's value as an integer (0 when unset; values were
// validated by Load).
func (c *Config) Int(key string) int64 {
	n, _ := strconv.ParseInt(c.String(key), 10, 64)
	return n
}

// Bool returns a key's value as a boolean (false when unset).
func (c *Config) Bool(key string) bool {
	b, _ := parseBool(c.String(key))
	return b
}

// Settings returns every key that is set or has a default, sorted by key.
func (c *Config) Settings() []Setting {
	out := make([]Setting, 0, len(c.settings))
	for _, k := range slices.Sorted(maps.Keys(c.settings)) {
		out = append(out, c.settings[k])
	}
	return out
}

// Warnings are the problems that did not stop Load (environment variables
// that map to no key).
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// TopicDefaults are the broker-level topic config defaults, keyed by topic
// config name (retention.ms, ...), converted from Kafka's broker keys.
func (c *Config) TopicDefaults() topic.Defaults { return maps.Clone(c.topicDefaults) }
