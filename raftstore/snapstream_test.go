package raftstore

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

// TestSnapshotReaderPins: a snapshot being sent holds one segment file
// open at a time, not one descriptor per segment, and its bytes survive the
// segments being removed under it (retention, topic deletion).
func TestSnapshotReaderPins(t *testing.T) {
	dir := t.TempDir()
	src := openTuned(t, dir, func(c *Config) { c.Defaults = topic.Defaults{"segment.bytes": "1024"} })
	defer src.Close()
	if err := src.CreateTopic(context.Background(), "p", topic.NewID(), 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		produce(t, src, "p", 0, batchtest.NoProducer, strings.Repeat("v", 100))
	}
	want, _ := streamSnapshot(t, src)
	snaps := &snapshotStore{inner: mustFileSnaps(t, dir), dataDir: dir, logger: testLogger()}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("list snapshots: %v", err)
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	files := len(rc.(*fileStreamReader).files)
	if files < 10 {
		t.Fatalf("want many segment files, have %d", files)
	}
	before := openFDs(t)
	got := make([]byte, len(want)/2)
	if _, err := io.ReadFull(rc, got); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t) - before; n > 2 {
		t.Fatalf("reading a snapshot of %d segment files holds %d more descriptors", files, n)
	}
	// The partition goes away mid-transfer; the pinned bytes stay.
	if err := os.RemoveAll(filepath.Join(dir, topic.PartitionDir("p", 0))); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read after the segments were removed: %v", err)
	}
	if !bytes.Equal(append(got, rest...), want) {
		t.Fatal("the stream differs from the one read before")
	}
	pins, _ := filepath.Glob(filepath.Join(dir, pinPrefix+"*"))
	if len(pins) != 1 {
		t.Fatalf("pin directories while reading: %v", pins)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if pins, _ := filepath.Glob(filepath.Join(dir, pinPrefix+"*")); len(pins) != 0 {
		t.Fatalf("pins left after Close: %v", pins)
	}
}
