package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []entry
	}{
		{"separators", "a=1\nb: 2\nc 3\nd\t=\t4\n", []entry{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}, {"d", "4", 4}}},
		{"comments and blanks", "# c\n! c\n\n   \n  e = 5  \n", []entry{{"e", "5  ", 5}}},
		{"empty value", "f=\ng\n", []entry{{"f", "", 1}, {"g", "", 2}}},
		{"continuation", "listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT://b:2\nx=y\n", []entry{{"listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2", 1}, {"x", "y", 3}}},
		{"escaped backslash is not continuation", "p=c:\\\\\nq=1\n", []entry{{"p", `c:\`, 1}, {"q", "1", 2}}},
		{"escapes", `k\=ey=v\tal\u0041\:`, []entry{{"k=ey", "v\talA:", 1}}},
		{"value keeps later separators", "url=http://h:1/a=b\n", []entry{{"url", "http://h:1/a=b", 1}}},
		{"duplicate: both kept, last wins later", "a=1\na=2\n", []entry{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := parseProperties(strings.NewReader(`a=\u12`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad \\u escape: got %v, want an error naming line 1", err)
	}
}

func TestParseYAML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []entry
	}{
		{"plain", "log.dirs: /data\nnum.partitions: 3\n", []entry{{"log.dirs", "/data", 1}, {"num.partitions", "3", 2}}},
		{"document markers and comments", "---\n# c\nnode.id: 2 # the id\n...\n", []entry{{"node.id", "2", 3}}},
		{"colons in values", "listeners: PLAINTEXT://0.0.0.0:9092\n", []entry{{"listeners", "PLAINTEXT://0.0.0.0:9092", 1}}},
		{"quoted", "a: \"x # not a comment\"\nb: 'it''s'\nc: \"tab\\there\\u0041\"\n", []entry{{"a", "x # not a comment", 1}, {"b", "it's", 2}, {"c", "tab\thereA", 3}}},
		{"quoted key", "\"log.dirs\": /d\n", []entry{{"log.dirs", "/d", 1}}},
		{"empty and null", "a:\nb: ~\nc: null\nd: \"\"\n", []entry{{"a", "", 1}, {"b", "", 2}, {"c", "", 3}, {"d", "", 4}}},
		{"hash inside a plain value", "a: x#y\n", []entry{{"a", "x#y", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseYAML(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseYAMLRefuses(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nested", "log:\n  dirs: /data\n", "line 2: indented"},
		{"list", "brokerd.raft.peers:\n- 1@a:1\n", "line 2: YAML lists"},
		{"flow", "a: [1, 2]\n", "line 1: value of a: flow collections"},
		{"anchor", "a: &x 1\n", "anchors"},
		{"block scalar", "a: |\n", "block scalars"},
		{"two documents", "a: 1\n---\nb: 2\n", "line 2: several YAML documents"},
		{"duplicate", "a: 1\na: 2\n", "line 2: key a already given on line 1"},
		{"no colon", "just text\n", "line 1: want"},
		{"no space", "a:1\n", "line 1: want"},
		{"unterminated", "a: \"x\n", "unterminated"},
		{"after end", "a: 1\n...\nb: 2\n", "line 3: content after the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseYAML(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	tests := []struct{ key, env string }{
		{"log.dirs", "BROKERD_LOG_DIRS"},
		{"node.id", "BROKERD_NODE_ID"},
		{"brokerd.raft.listener", "BROKERD_BROKERD_RAFT_LISTENER"},
		{"a_b.c-d", "BROKERD_A__B_C___D"},
	}
	for _, tt := range tests {
		if got := EnvName(tt.key); got != tt.env {
			t.Errorf("EnvName(%q) = %q, want %q", tt.key, got, tt.env)
		}
		if got := keyFromEnv(strings.TrimPrefix(tt.env, EnvPrefix)); got != tt.key {
			t.Errorf("keyFromEnv(%q) = %q, want %q", tt.env, got, tt.key)
		}
	}
}
