// Package admin administers a Kafka-compatible cluster (brokerd, or Kafka
// itself) over the Kafka protocol, with franz-go's kadm: topics (create,
// list, describe with offsets and configs, delete, alter configs), the
// cluster (id, controller, brokers), and consumer groups (list, describe
// with lag, delete, seek). `brokerd topic|group|cluster ...` are thin
// shells over it; Go programs can use it the same way.
//
// Every call takes a context that bounds it; results are plain structs with
// JSON tags, ready to print.
package admin
