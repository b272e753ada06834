// Command brokerd is the one brokerd binary. With no subcommand it serves a
// Kafka-compatible broker, configured by flags, BROKERD_* environment
// variables and a --config file (see internal/config). Its subcommands
// administer a cluster over the Kafka protocol, like rpk and Kafka's shell
// scripts: topic, produce, consume, group, cluster and version. Each is a
// thin shell over a package in clients/.
package main
