// Command brokerd is the one brokerd binary. With no subcommand it serves a
// Kafka-compatible broker; subcommands administer it (see `brokerd --help`).
package main
