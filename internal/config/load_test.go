package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/internal/node"
)

// writeFile writes a config file named name into a temp dir.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	type want struct {
		key, value string
		source     Source
	}
	tests := []struct {
		name     string
		file     string // "name\nbody"
		env      []string
		flags    []Input
		want     []want
		topic    map[string]string // expected TopicDefaults entries
		warnings int
	}{
		{name: "defaults", want: []want{
			{"log.dirs", "./brokerd-data", SourceDefault}, {"listeners", "PLAINTEXT://127.0.0.1:9092", SourceDefault},
			{"node.id", "1", SourceDefault}, {"brokerd.admin.listener", "127.0.0.1:9644", SourceDefault},
		}},
		{name: "file over defaults", file: "server.properties\nlog.dirs=/f\nnum.partitions=3\n",
			want: []want{{"log.dirs", "/f", SourceFile}, {"num.partitions", "3", SourceFile}}},
		{name: "yaml file", file: "brokerd.yaml\nlog.dirs: /y\nauto.create.topics.enable: false\n",
			want: []want{{"log.dirs", "/y", SourceFile}, {"auto.create.topics.enable", "false", SourceFile}}},
		{name: "env over file", file: "s.properties\nlog.dirs=/f\nnum.partitions=3\n", env: []string{"BROKERD_LOG_DIRS=/e"},
			want: []want{{"log.dirs", "/e", SourceEnv}, {"num.partitions", "3", SourceFile}}},
		{name: "flag over env over file", file: "s.properties\nlog.dirs=/f\n", env: []string{"BROKERD_LOG_DIRS=/e"},
			flags: []Input{{Key: "log.dirs", Value: "/x", Origin: "--data-dir"}},
			want:  []want{{"log.dirs", "/x", SourceFlag}}},
		{name: "alias in file, key in flag", file: "s.properties\nbroker.id=7\n", flags: []Input{{Key: "node.id", Value: "3", Origin: "--node-id"}},
			want: []want{{"node.id", "3", SourceFlag}}},
		{name: "alias alone", file: "s.properties\nbroker.id=7\nlog.dir=/old\n",
			want: []want{{"node.id", "7", SourceFile}, {"log.dirs", "/old", SourceFile}}},
		{name: "alias and key agreeing", file: "s.properties\nbroker.id=7\nnode.id=7\n", want: []want{{"node.id", "7", SourceFile}}},
		{name: "brokerd keys from short env names", env: []string{"BROKERD_RAFT_LISTENER=0.0.0.0:1", "BROKERD_BROKERD_ADMIN_LISTENER=127.0.0.1:2"},
			want: []want{{"brokerd.raft.listener", "0.0.0.0:1", SourceEnv}, {"brokerd.admin.listener", "127.0.0.1:2", SourceEnv}}},
		{name: "unknown env is a warning", env: []string{"BROKERD_BIN=/tmp/x", "OTHER=1", "BROKERD_NUM_PARTITIONS=4"}, warnings: 1,
			want: []want{{"num.partitions", "4", SourceEnv}}},
		{name: "retention hours in a file", file: "s.properties\nlog.retention.hours=24\nlog.segment.bytes=1048576\n",
			topic: map[string]string{"retention.ms": "86400000", "segment.bytes": "1048576"}},
		{name: "ms beats hours within a source", file: "s.properties\nlog.retention.hours=24\nlog.retention.ms=5000\n",
			topic: map[string]string{"retention.ms": "5000"}},
		{name: "a higher source's hours beat a lower source's ms", file: "s.properties\nlog.retention.ms=5000\n",
			env: []string{"BROKERD_LOG_RETENTION_HOURS=2"}, topic: map[string]string{"retention.ms": "7200000"}},
		{name: "negative retention is unlimited", env: []string{"BROKERD_LOG_RETENTION_MINUTES=-5"}, topic: map[string]string{"retention.ms": "-1"}},
		{name: "message.max.bytes and roll hours", flags: []Input{{Key: "message.max.bytes", Value: "2000000", Origin: "--override"}, {Key: "log.roll.hours", Value: "2", Origin: "--override"}},
			topic: map[string]string{"max.message.bytes": "2000000", "segment.ms": "7200000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Environ: tt.env, Flags: tt.flags}
			if tt.file != "" {
				name, body, _ := strings.Cut(tt.file, "\n")
				src.File = writeFile(t, name, body)
			}
			c, err := Load(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				s, ok := c.Get(w.key)
				if !ok || s.Value != w.value || s.Source != w.source {
					t.Errorf("%s = %+v (set %v), want %q from %v", w.key, s, ok, w.value, w.source)
				}
			}
			td := c.TopicDefaults()
			for k, v := range tt.topic {
				if td[k] != v {
					t.Errorf("topic default %s = %q, want %q (all: %v)", k, td[k], v, td)
				}
			}
			if got := len(c.Warnings()); got != tt.warnings {
				t.Errorf("warnings %q, want %d", c.Warnings(), tt.warnings)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		flags []Input
		is    error
		want  []string // substrings of the message
	}{
		{name: "unknown key in a file", file: "s.properties\nnum.partitions=2\nlog.dir5=/x\n", is: ErrUnknownKey,
			want: []string{"s.properties:2", `unknown config key "log.dir5"`, `did you mean "log.dirs"`}},
		{name: "unknown key in yaml", file: "b.yaml\nzookeeper.connect: zk:2181\n", is: ErrUnknownKey,
			want: []string{"b.yaml:1", "zookeeper.connect"}},
		{name: "bad int in env", env: []string{"BROKERD_NUM_PARTITIONS=many"}, is: ErrBadValue,
			want: []string{"BROKERD_NUM_PARTITIONS", `num.partitions="many"`, "integer"}},
		{name: "zero partitions", flags: []Input{{Key: "num.partitions", Value: "0", Origin: "--num-partitions"}}, is: ErrBadValue,
			want: []string{"--num-partitions", "at least 1"}},
		{name: "bad bool", file: "s.properties\nauto.create.topics.enable=yes\n", is: ErrBadValue,
			want: []string{"auto.create.topics.enable", "true or false"}},
		{name: "listener named twice", env: []string{"BROKERD_LISTENERS=PLAINTEXT://a:1,PLAINTEXT://b:2"}, is: ErrBadValue, want: []string{"listener PLAINTEXT given twice"}},
		{name: "two listeners on a port", env: []string{"BROKERD_LISTENERS=PLAINTEXT://a:1,SSL://b:1"}, is: ErrBadValue, want: []string{"both bind port 1"}},
		{name: "bad protocol map", file: "s.properties\nlistener.security.protocol.map=CLIENT:TLS\n", is: ErrBadValue, want: []string{"unknown security protocol", "SASL_SSL"}},
		{name: "unspecified advertised host", file: "s.properties\nadvertised.listeners=PLAINTEXT://0.0.0.0:9092\n", is: ErrBadValue, want: []string{"cannot be dialled"}},
		{name: "two log dirs", file: "s.properties\nlog.dirs=/a,/b\n", is: ErrBadValue, want: []string{"one data directory"}},
		{name: "bad topic default", file: "s.properties\nlog.cleanup.policy=shred\n", is: ErrBadValue, want: []string{"log.cleanup.policy"}},
		{name: "bad retention hours", env: []string{"BROKERD_LOG_RETENTION_HOURS=1d"}, is: ErrBadValue, want: []string{"BROKERD_LOG_RETENTION_HOURS"}},
		{name: "alias conflict", file: "s.properties\nbroker.id=1\nnode.id=2\n", is: ErrBadValue, want: []string{"both set node.id"}},
		{name: "bad peers", flags: []Input{{Key: "brokerd.raft.peers", Value: "1@a:1,x@b:2", Origin: "--peers"}}, is: ErrBadValue, want: []string{"--peers", "positive integer"}},
		{name: "unknown flag override", flags: []Input{{Key: "num.partition", Value: "1", Origin: "--override"}}, is: ErrUnknownKey, want: []string{"--override", `did you mean "num.partitions"`}},
		{name: "bad log store", env: []string{"BROKERD_RAFT_LOG_STORE=rocks"}, is: ErrBadValue, want: []string{"wal, boltdb"}},
		{name: "every error at once", file: "s.properties\nfoo=1\nnum.partitions=-1\n", is: ErrUnknownKey, want: []string{"foo", "num.partitions"}},
		{name: "missing file", file: "", is: os.ErrNotExist, want: []string{"config file"}},
		// Past these a time.Duration of milliseconds overflowed.
		{name: "reauth too long", env: []string{"BROKERD_CONNECTIONS_MAX_REAUTH_MS=9223372036854775807"}, is: ErrBadValue, want: []string{"connections.max.reauth.ms"}},
		{name: "failed auth delay too long", env: []string{"BROKERD_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS=2147483647"}, is: ErrBadValue, want: []string{"connection.failed.authentication.delay.ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Environ: tt.env, Flags: tt.flags}
			if tt.file != "" {
				name, body, _ := strings.Cut(tt.file, "\n")
				src.File = writeFile(t, name, body)
			} else if tt.is == os.ErrNotExist {
				src.File = filepath.Join(t.TempDir(), "nope.properties")
			}
			_, err := Load(src)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestNodeConfig(t *testing.T) {
	c, err := Load(Sources{
		File: writeFile(t, "s.properties", "listeners=PLAINTEXT://0.0.0.0:19092\nadvertised.listeners=PLAINTEXT://broker1:19092\n"+
			"log.dirs=/var/lib/brokerd\nbroker.id=2\nbrokerd.raft.peers=1@a:1,2@b:2,3@c:3\nlog.retention.hours=1\n"+
			"socket.request.max.bytes=1000\nconnections.max.idle.ms=5000\nbrokerd.metrics.partition.enable=false\n"),
		Environ: []string{"BROKERD_RAFT_ADVERTISED_LISTENER=b:2", "BROKERD_SHUTDOWN_TIMEOUT_MS=1500"},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Node()
	if err != nil {
		t.Fatal(err)
	}
	if n.KafkaAddr != "0.0.0.0:19092" || n.AdvertisedAddr != "broker1:19092" || n.DataDir != "/var/lib/brokerd" || n.NodeID != 2 {
		t.Errorf("addresses: %+v", n)
	}
	if len(n.Peers) != 3 || n.RaftAdvertise != "b:2" || !n.NoPartitionMetrics {
		t.Errorf("raft and metrics: %+v", n)
	}
	if n.TopicDefaults["retention.ms"] != "3600000" || n.Wire.MaxRequestBytes != 1000 || n.Wire.IdleTimeout.Milliseconds() != 5000 {
		t.Errorf("defaults and wire: %+v %+v", n.TopicDefaults, n.Wire)
	}
	if c.ShutdownTimeout().Milliseconds() != 1500 || c.LogLevel() != "info" || c.LogFormat() != "text" {
		t.Errorf("process settings: %v %q %q", c.ShutdownTimeout(), c.LogLevel(), c.LogFormat())
	}

	c, err = Load(Sources{Flags: []Input{{Key: "brokerd.raft.peers", Value: "2@a:1,3@b:2", Origin: "--peers"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Node(); err == nil || !strings.Contains(err.Error(), "does not list this node") {
		t.Errorf("peers without this node: got %v", err)
	}
}

// TestListenersConfig: several listeners with their protocols and
// advertised addresses, and the start-up errors of the listener keys.
func TestListenersConfig(t *testing.T) {
	c, err := Load(Sources{File: writeFile(t, "s.properties",
		"listeners=PLAINTEXT://127.0.0.1:9092,ssl://0.0.0.0:9093,CLIENT://:9094\n"+
			"advertised.listeners=SSL://broker1:9093\n"+
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENT:SSL\n"+
			"ssl.keystore.location=/etc/brokerd/server.pem\nssl.truststore.location=/etc/brokerd/ca.pem\nssl.client.auth=required\n")})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Node()
	if err != nil {
		t.Fatal(err)
	}
	want := []node.Listener{
		{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092"},
		{Name: "SSL", Protocol: "SSL", Addr: "0.0.0.0:9093", Advertised: "broker1:9093"},
		{Name: "CLIENT", Protocol: "SSL", Addr: ":9094"},
	}
	if !slices.Equal(n.Listeners, want) || n.KafkaAddr != "127.0.0.1:9092" {
		t.Errorf("listeners %+v, want %+v", n.Listeners, want)
	}
	if n.TLS.KeystoreLocation != "/etc/brokerd/server.pem" || n.TLS.TruststoreLocation != "/etc/brokerd/ca.pem" || n.TLS.ClientAuth != "required" || n.TLS.PrincipalRules != "DEFAULT" {
		t.Errorf("TLS %+v", n.TLS)
	}

	// The default is one PLAINTEXT listener on 127.0.0.1:9092.
	c, _ = Load(Sources{})
	n, err = c.Node()
	if err != nil || len(n.Listeners) != 1 || n.Listeners[0] != (node.Listener{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092"}) {
		t.Errorf("default listeners %+v, %v", n.Listeners, err)
	}

	for _, tt := range []struct{ name, props, want string }{
		{"protocol not in the map", "listeners=CLIENT://:9094\n", "listener CLIENT has no security protocol"},
		{"SASL_SSL without a keystore", "listeners=SASL_SSL://:9094\n", "set ssl.keystore.location"},
		{"unknown mechanism", "listeners=SASL_PLAINTEXT://:9094\nsasl.enabled.mechanisms=GSSAPI\n", `mechanism "GSSAPI" is not supported`},
		{"bootstrap user without a mechanism", "brokerd.sasl.bootstrap.users=admin:secret\n", "want NAME:MECHANISM:PASSWORD"},
		{"bootstrap user with PLAIN", "brokerd.sasl.bootstrap.users=admin:PLAIN:secret\n", "want SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"missing keystore", "listeners=SSL://:9093\n", "set ssl.keystore.location"},
		{"client auth without truststore", "listeners=SSL://:9093\nssl.keystore.location=/k.pem\nssl.client.auth=required\n", "set ssl.truststore.location"},
		{"advertised listener not bound", "advertised.listeners=SSL://broker1:9093\n", "listener SSL is not in listeners"},
	} {
		c, err := Load(Sources{File: writeFile(t, "s.properties", tt.props)})
		if err == nil {
			_, err = c.Node()
		}
		if err == nil || !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	for _, tt := range []struct{ props, want string }{
		{"ssl.keystore.type=JKS\n", "want one of PEM"},
		{"ssl.client.auth=always\n", "none, requested, required"},
		{"ssl.principal.mapping.rules=RULE:x\n", "ssl.principal.mapping.rules"},
	} {
		if _, err := Load(Sources{File: writeFile(t, "s.properties", tt.props)}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.props, err, tt.want)
		}
	}
}

// TestKeysDocumented keeps docs/OPERATIONS.md listing every key.
func TestKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if !strings.Contains(string(doc), "`"+k.Name+"`") {
			t.Errorf("docs/OPERATIONS.md does not mention `%s`", k.Name)
		}
	}
	for a := range Aliases() {
		if !strings.Contains(string(doc), "`"+a+"`") {
			t.Errorf("docs/OPERATIONS.md does not mention the alias `%s`", a)
		}
	}
}
