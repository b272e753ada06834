package topic

import (
	"slices"
	"strings"
	"testing"
)

// kafka39 pins the table to Kafka 3.9's documented topic configs: type,
// default and server default property.
var kafka39 = []struct {
	name, typ, def, brokerKey string
}{
	{"cleanup.policy", "list", "delete", "log.cleanup.policy"},
	{"compression.gzip.level", "int", "-1", "compression.gzip.level"},
	{"compression.lz4.level", "int", "9", "compression.lz4.level"},
	{"compression.type", "string", "producer", "compression.type"},
	{"compression.zstd.level", "int", "3", "compression.zstd.level"},
	{"delete.retention.ms", "long", "86400000", "log.cleaner.delete.retention.ms"},
	{"file.delete.delay.ms", "long", "60000", "log.segment.delete.delay.ms"},
	{"flush.messages", "long", "9223372036854775807", "log.flush.interval.messages"},
	{"flush.ms", "long", "9223372036854775807", "log.flush.interval.ms"},
	{"index.interval.bytes", "int", "4096", "log.index.interval.bytes"},
	{"max.compaction.lag.ms", "long", "9223372036854775807", "log.cleaner.max.compaction.lag.ms"},
	{"max.message.bytes", "int", "1048588", "message.max.bytes"},
	{"message.downconversion.enable", "boolean", "true", "log.message.downconversion.enable"},
	{"message.timestamp.after.max.ms", "long", "9223372036854775807", "log.message.timestamp.after.max.ms"},
	{"message.timestamp.before.max.ms", "long", "9223372036854775807", "log.message.timestamp.before.max.ms"},
	{"message.timestamp.difference.max.ms", "long", "9223372036854775807", "log.message.timestamp.difference.max.ms"},
	{"message.timestamp.type", "string", "CreateTime", "log.message.timestamp.type"},
	{"min.cleanable.dirty.ratio", "double", "0.5", "log.cleaner.min.cleanable.ratio"},
	{"min.compaction.lag.ms", "long", "0", "log.cleaner.min.compaction.lag.ms"},
	{"min.insync.replicas", "int", "1", "min.insync.replicas"},
	{"preallocate", "boolean", "false", "log.preallocate"},
	{"retention.bytes", "long", "-1", "log.retention.bytes"},
	{"retention.ms", "long", "604800000", "log.retention.ms"},
	{"segment.bytes", "int", "1073741824", "log.segment.bytes"},
	{"segment.index.bytes", "int", "10485760", "log.index.size.max.bytes"},
	{"segment.jitter.ms", "long", "0", "log.roll.jitter.ms"},
	{"segment.ms", "long", "604800000", "log.roll.ms"},
	{"unclean.leader.election.enable", "boolean", "false", "unclean.leader.election.enable"},
}

func TestDefsMatchKafka(t *testing.T) {
	all := Defs()
	if len(all) != len(kafka39) {
		t.Fatalf("Defs() has %d configs, want %d", len(all), len(kafka39))
	}
	for i, want := range kafka39 {
		d := all[i]
		if d.Name != want.name || d.Type.String() != want.typ || d.Default != want.def || d.BrokerKey != want.brokerKey {
			t.Errorf("Defs()[%d] = {%s %s %s %s}, want %+v", i, d.Name, d.Type, d.Default, d.BrokerKey, want)
		}
	}
}

func TestDefsWellFormed(t *testing.T) {
	all := Defs()
	if !slices.IsSortedFunc(all, func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Defs() is not sorted by name")
	}
	names, brokerKeys := map[string]bool{}, map[string]bool{}
	for _, d := range all {
		if names[d.Name] {
			t.Errorf("duplicate config %s", d.Name)
		}
		if brokerKeys[d.BrokerKey] {
			t.Errorf("duplicate broker key %s", d.BrokerKey)
		}
		names[d.Name], brokerKeys[d.BrokerKey] = true, true
		if d.Doc == "" || d.BrokerKey == "" || d.Validate == nil || d.Type.String() == "unknown" {
			t.Errorf("%s: incomplete definition", d.Name)
		}
		if d.ReadOnly {
			t.Errorf("%s: no Kafka topic config is read-only", d.Name)
		}
		if err := d.Validate(d.Default); err != nil {
			t.Errorf("%s: default %q does not validate: %v", d.Name, d.Default, err)
		}
	}
	if got := Names(); len(got) != len(all) || got[0] != all[0].Name {
		t.Errorf("Names() = %v", got)
	}
}

// TestValidateMatchesType checks that each validator parses its own type.
func TestValidateMatchesType(t *testing.T) {
	for _, d := range Defs() {
		var bad []string
		switch d.Type {
		case Int:
			bad = []string{"", "x", "1.5", "2147483648", "-2147483649", "1e3"}
		case Long:
			bad = []string{"", "x", "1.5", "9223372036854775808", "0x10"}
		case Boolean:
			bad = []string{"", "yes", "1", "t", "on"}
		case Double:
			bad = []string{"", "x", "NaN", "Inf", "-Inf"}
		case String, List:
			bad = []string{"", "no-such-value"}
		}
		for _, v := range bad {
			if d.Validate(v) == nil {
				t.Errorf("%s (%s) accepts %q", d.Name, d.Type, v)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	d, ok := Lookup("retention.ms")
	if !ok || d.Name != RetentionMs || d.Type != Long {
		t.Fatalf("Lookup(retention.ms) = %+v, %v", d, ok)
	}
	if _, ok := Lookup("log.retention.ms"); ok {
		t.Error("Lookup accepts a broker key")
	}
	if _, ok := Lookup("no.such.config"); ok {
		t.Error("Lookup accepts an unknown name")
	}
	b, ok := LookupBrokerKey("message.max.bytes")
	if !ok || b.Name != MaxMessageBytes {
		t.Fatalf("LookupBrokerKey(message.max.bytes) = %+v, %v", b, ok)
	}
	if _, ok := LookupBrokerKey("retention.ms"); ok {
		t.Error("LookupBrokerKey accepts a topic config name")
	}
	// Callers get copies: changing one does not change the table.
	all := Defs()
	all[0].Default = "changed"
	if d, _ := Lookup(all[0].Name); d.Default == "changed" {
		t.Error("Defs() shares its backing array with the table")
	}
}

func TestTypeAndSourceStrings(t *testing.T) {
	types := map[Type]string{Boolean: "boolean", String: "string", Int: "int", Long: "long", Double: "double", List: "list", TypeUnknown: "unknown"}
	for ty, want := range types {
		if ty.String() != want {
			t.Errorf("Type(%d).String() = %q, want %q", int(ty), ty.String(), want)
		}
	}
	// Codes of Kafka's DescribeConfigs ConfigType and ConfigSource.
	codes := []struct {
		got, want int
	}{
		{int(Boolean), 1}, {int(String), 2}, {int(Int), 3}, {int(Long), 5}, {int(Double), 6}, {int(List), 7},
		{int(DynamicTopic), 1}, {int(StaticBroker), 4}, {int(Default), 5},
	}
	for _, c := range codes {
		if c.got != c.want {
			t.Errorf("code %d, want %d", c.got, c.want)
		}
	}
	sources := map[Source]string{DynamicTopic: "DYNAMIC_TOPIC_CONFIG", StaticBroker: "STATIC_BROKER_CONFIG", Default: "DEFAULT_CONFIG", SourceUnknown: "UNKNOWN"}
	for s, want := range sources {
		if s.String() != want {
			t.Errorf("Source(%d).String() = %q, want %q", int(s), s.String(), want)
		}
	}
}
