package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerd/brokerd/internal/config"
)

// serveFlag is a command-line flag that sets a config key.
type serveFlag struct {
	name, key, typ, usage string
	// conv turns the flag's text into the key's, when they differ.
	conv func(string) (string, error)
}

// serveFlags are the flags of `brokerd` (serve). Each one sets a config
// key, at the highest precedence; --override sets any key.
var serveFlags = []serveFlag{
	{name: "data-dir", key: "log.dirs", typ: "path", usage: "where the data lives (Kafka's log.dirs)"},
	{name: "kafka-addr", key: "listeners", typ: "host:port", usage: "the Kafka listener (listeners); also advertised unless --advertised-addr is given"},
	{name: "advertised-addr", key: "advertised.listeners", typ: "host:port", usage: "the host:port clients are told to connect to (advertised.listeners)"},
	{name: "admin-addr", key: "brokerd.admin.listener", typ: "host:port", usage: "the admin HTTP listener (/metrics, /healthz, /readyz, /debug/pprof/); empty disables it"},
	{name: "node-id", key: "node.id", typ: "int", usage: "this node's id (node.id)"},
	{name: "raft-addr", key: "brokerd.raft.listener", typ: "host:port", usage: "raft's listener"},
	{name: "raft-advertised-addr", key: "brokerd.raft.advertised.listener", typ: "host:port", usage: "the raft address peers dial (default: --raft-addr)"},
	{name: "peers", key: "brokerd.raft.peers", typ: "list", usage: "static raft membership for a new cluster: id@raft-host:port,... (this node included)"},
	{name: "join", key: "brokerd.raft.join", typ: "host:port", usage: "join a running cluster through any member's admin address (instead of --peers)"},
	{name: "auto-create-topics", key: "auto.create.topics.enable", typ: "bool", usage: "auto.create.topics.enable"},
	{name: "num-partitions", key: "num.partitions", typ: "int", usage: "num.partitions for auto-created topics"},
	{name: "default-replication-factor", key: "default.replication.factor", typ: "int", usage: "default.replication.factor reported for new topics"},
	{name: "raft-log-store", key: "brokerd.raft.log.store", typ: "string", usage: "raft's log store: wal or boltdb"},
	{name: "max-connections-per-ip", key: "max.connections.per.ip", typ: "int", usage: "connections one client address (IPv4, IPv6 /64) may have open (max.connections.per.ip)"},
	{name: "log-level", key: "brokerd.log.level", typ: "string", usage: "debug, info, warn or error"},
	{name: "log-format", key: "brokerd.log.format", typ: "string", usage: "text or json"},
	{name: "shutdown-timeout", key: "brokerd.shutdown.timeout.ms", typ: "duration", conv: durationToMs,
		usage: "how long SIGTERM waits for requests in flight (brokerd.shutdown.timeout.ms)"},
}

// keyValue is a flag holding a config value as text; config.Load checks it.
type keyValue struct {
	v   string
	typ string
}

func (k *keyValue) String() string     { return k.v }
func (k *keyValue) Set(s string) error { k.v = s; return nil }
func (k *keyValue) Type() string       { return k.typ }

func durationToMs(s string) (string, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return "", fmt.Errorf("want a duration such as 30s: %w", err)
	}
	return strconv.FormatInt(d.Milliseconds(), 10), nil
}

func msToDuration(ms string) string {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return ms
	}
	return (time.Duration(n) * time.Millisecond).String()
}

// serveOptions are the serve command's own flags besides the key flags.
type serveOptions struct {
	configFile  string
	overrides   []string
	printConfig bool
}

// addServeFlags registers the key flags (with the keys' defaults) and the
// serve options on fs.
func addServeFlags(fs *pflag.FlagSet, o *serveOptions) {
	for _, f := range serveFlags {
		k, ok := config.Lookup(f.key)
		if !ok {
			panic("serve flag --" + f.name + " names unknown key " + f.key)
		}
		def := k.Default
		switch f.typ {
		case "duration":
			def = msToDuration(def)
		case "host:port":
			def = strings.TrimPrefix(def, "PLAINTEXT://")
		}
		v := &keyValue{v: def, typ: f.typ}
		fl := fs.VarPF(v, f.name, "", f.usage)
		if f.typ == "bool" {
			fl.NoOptDefVal = "true"
		}
	}
	fs.StringVar(&o.configFile, "config", "", "a config file: Kafka .properties, or flat YAML (.yaml, .yml) with the same keys")
	fs.StringArrayVar(&o.overrides, "override", nil, "set any config key, key=value (repeatable; like kafka-server-start.sh --override)")
	fs.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration with where each value comes from, then exit")
}

// flagInputs returns the config keys set by the flags given on the command
// line, converted to the keys' units.
func flagInputs(cmd *cobra.Command, o *serveOptions) ([]config.Input, error) {
	var out []config.Input
	var errs []error
	for _, f := range serveFlags {
		fl := cmd.Flags().Lookup(f.name)
		if fl == nil || !fl.Changed {
			continue
		}
		v := fl.Value.String()
		if f.conv != nil {
			c, err := f.conv(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("--%s %q: %w", f.name, v, err))
				continue
			}
			v = c
		}
		out = append(out, config.Input{Key: f.key, Value: v, Origin: "--" + f.name})
	}
	for _, kv := range o.overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--override %q: want key=value", kv))
			continue
		}
		out = append(out, config.Input{Key: strings.TrimSpace(k), Value: v, Origin: "--override " + strings.TrimSpace(k)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
