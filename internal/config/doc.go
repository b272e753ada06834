// Package config reads brokerd's server configuration: Kafka's
// server.properties keys (listeners, log.dirs, log.retention.hours, ...)
// plus brokerd's own brokerd.* keys, from four sources in increasing
// precedence: built-in defaults, a file (--config), BROKERD_-prefixed
// environment variables, and command-line flags.
//
// The file is a Java .properties file (Kafka's format) or, when its name
// ends in .yaml or .yml, a flat YAML mapping with the same keys. Only that
// flat subset of YAML is read: one "key: value" per line, keys written with
// their dots (log.dirs: /data), values plain or quoted, comments with #.
// Nesting, lists, anchors and multi-line scalars are refused with an error
// naming the line, so a file never means something other than it says.
//
// Environment variables follow Confluent's Docker convention: strip the
// prefix, then "___" is "-", "__" is "_" and "_" is ".", lower-cased, so
// BROKERD_LOG_DIRS sets log.dirs. For brokerd's own keys the repeated
// prefix may be dropped: BROKERD_RAFT_LISTENER and
// BROKERD_BROKERD_RAFT_LISTENER both set brokerd.raft.listener.
//
// An unknown key or a bad value in the file or in a flag is an error that
// names the key, its value and where it came from. An environment variable
// that maps to no key is a warning only, because the environment is shared
// with other tools (a test harness's BROKERD_BIN, for instance); a known
// key with a bad value is an error wherever it comes from.
package config
