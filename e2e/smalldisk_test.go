package e2e

import (
	"os/exec"
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
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 64 MiB tmpfs (needs root): %v: %s", err, out)
	}
	// A test binary killed before this runs leaves the mount behind.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	n := startNode(t, func(c *node.Config) { c.DataDir = dir })
	cl := newKgo(t, n.KafkaAddr(), kgo.DefaultProduceTopic("small-disk"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("fits")}).FirstErr(); err != nil {
		t.Fatalf("produce on a 64 MiB disk: %v", err)
	}
}
