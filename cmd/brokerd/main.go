// Command brokerd is the one brokerd binary: it serves a Kafka-compatible
// broker and administers it (see package cli).
package main

import "github.com/brokerd/brokerd/cli"

func main() { cli.Main() }
