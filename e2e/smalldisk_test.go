package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerd/brokerd/internal/node"
)

// TestSmallDisk: a node whose data directory is on a 64 MiB filesystem
// starts and serves (raft-wal's segments are sized from the disk; at 64
// MiB each, the first alone used to fail start-up with "no space left on
// device"). It needs to mount a tmpfs, so it runs as root only.
func TestSmallDisk(t *testing.T) {
	dir := tmpfsDir(t, "64m")
	n := startNode(t, func(c *node.Config) { c.DataDir = dir })
	cl := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic("small-disk"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("fits")}).FirstErr(); err != nil {
		t.Fatalf("produce on a 64 MiB disk: %v", err)
	}
}
