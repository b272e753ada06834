// Package cli is the brokerd command: `brokerd` itself (cmd/brokerd) is
// cli.Main, and so is a custom build that adds its own processor plugins
// (examples/custom-brokerd). With no subcommand it serves a
// Kafka-compatible broker, configured by flags, BROKERD_* environment
// variables and a --config file (see internal/config). Its subcommands
// administer a cluster over the Kafka protocol, like rpk and Kafka's shell
// scripts: topic, produce, consume, group, cluster, processor and version. Each is a
// thin shell over a package in clients/.
package cli
