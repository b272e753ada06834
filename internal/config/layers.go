package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// layerBuilder collects one source's settings, resolving aliases and
// refusing the same key given twice with different values under two names.
type layerBuilder struct {
	set  map[string]Setting
	name map[string]string // canonical key -> the name it was given as
	errs []error
}

func newLayer() *layerBuilder {
	return &layerBuilder{set: map[string]Setting{}, name: map[string]string{}}
}

// add validates and records name=value. Within one source the last value
// of a name wins (as in Java's Properties).
func (b *layerBuilder) add(src Source, origin, name, value string) {
	value = strings.TrimSpace(value) // as Kafka trims values before parsing them
	k, ok := Lookup(name)
	if !ok {
		b.errs = append(b.errs, unknownKey(origin, name, value))
		return
	}
	if err := k.Check(value); err != nil {
		b.errs = append(b.errs, badValue(origin, name, value, err))
		return
	}
	if prev, ok := b.set[k.Name]; ok && b.name[k.Name] != name && prev.Value != value {
		b.errs = append(b.errs, badValue(origin, name, value,
			fmt.Errorf("conflicts with %s=%q (%s): both set %s", b.name[k.Name], prev.Value, prev.Origin, k.Name)))
		return
	}
	b.set[k.Name] = Setting{Key: k.Name, Value: value, Source: src, Origin: origin}
	b.name[k.Name] = name
}

func (b *layerBuilder) settings() []Setting {
	out := make([]Setting, 0, len(b.set))
	for _, k := range slices.Sorted(maps.Keys(b.set)) {
		out = append(out, b.set[k])
	}
	return out
}

func fileLayer(path string) ([]Setting, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	var entries []entry
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		entries, err = parseYAML(f)
	default:
		entries, err = parseProperties(f)
	}
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	b := newLayer()
	for _, e := range entries {
		b.add(SourceFile, path+":"+strconv.Itoa(e.line), e.key, e.value)
	}
	return b.settings(), errors.Join(b.errs...)
}

func envLayer(environ []string) ([]Setting, []string, error) {
	b := newLayer()
	var warnings []string
	for _, in := range fromEnv(environ) {
		if !in.known {
			warnings = append(warnings, fmt.Sprintf("%s: maps to no config key (%s); ignored", in.name, in.key))
			continue
		}
		b.add(SourceEnv, in.name, in.key, in.value)
	}
	slices.Sort(warnings)
	return b.settings(), warnings, errors.Join(b.errs...)
}

func flagLayer(flags []Input) ([]Setting, error) {
	b := newLayer()
	for _, in := range flags {
		b.add(SourceFlag, in.Origin, in.Key, in.Value)
	}
	return b.settings(), errors.Join(b.errs...)
}
