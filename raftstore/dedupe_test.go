package raftstore

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// copyPartitions copies every partition directory's .log files from src to
// dst, as a follower that once replicated them holds them.
func copyPartitions(t *testing.T, src, dst string) []string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(src, "*-*", "*.log"))
	var rels []string
	for _, m := range matches {
		rel, _ := filepath.Rel(src, m)
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	return rels
}

// TestInstallDedupe: files the follower holds with the leader's checksum
// are sent as references and staged from the follower's own copies; a
// copy that differs is sent whole; a copy that changes after the leader
// asked fails the install instead of staging wrong bytes.
func TestInstallDedupe(t *testing.T) {
	dir := t.TempDir()
	src := openTuned(t, dir, func(c *Config) { c.Defaults = topic.Defaults{"segment.bytes": "2048"} })
	defer src.Close()
	if err := src.CreateTopic(context.Background(), "d", topic.NewID(), 2, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 80; i++ {
		produce(t, src, "d", int32(i%2), batchtest.NoProducer, strings.Repeat("v", 100))
	}
	full, _ := streamSnapshot(t, src)
	snaps := &snapshotStore{inner: mustFileSnaps(t, dir), dataDir: dir, logger: testLogger()}
	list, _ := snaps.List()
	open := func() *fileStreamReader {
		_, rc, err := snaps.Open(list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc.(*fileStreamReader)
	}

	dst := t.TempDir()
	rels := copyPartitions(t, dir, dst)
	// One sealed copy differs from the leader's.
	differs := filepath.Join(dst, filepath.FromSlash(rels[0]))
	b, _ := os.ReadFile(differs)
	b[len(b)-1] ^= 0xff
	os.WriteFile(differs, b, 0o644)

	ctx := context.Background()
	held := newHoldSet(dst)
	r := open()
	reused, saved, err := r.dedupe(ctx, func(want []HeldFile) ([]HeldFile, error) { return held.answer(ctx, want) })
	if err != nil {
		t.Fatal(err)
	}
	// Every file but the one that differs and the active segments (which
	// the follower may still append to) goes as a reference.
	sealed := 0
	for _, f := range r.files {
		if active, _ := isActiveSegment(filepath.Join(dst, filepath.FromSlash(f.name))); !active {
			sealed++
		}
	}
	if reused != sealed-1 || saved == 0 {
		t.Fatalf("reused %d of %d files (%d sealed, %d bytes); want all sealed ones but the one that differs", reused, len(r.files), sealed, saved)
	}
	// The originals go away (retention, a deletion) after the answer: the
	// held copies still stage.
	for _, rel := range rels[1:3] {
		os.Remove(filepath.Join(dst, filepath.FromSlash(rel)))
	}
	size := r.size()
	stream, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(stream)) != size || len(stream) >= len(full)/2 {
		t.Fatalf("deduplicated stream of %d bytes (size says %d), full one %d", len(stream), size, len(full))
	}
	if err := sinkResultHeld(t, dst, stream, held); err != nil {
		t.Fatalf("install from references: %v", err)
	}
	m, err := decodeManifest(mustManifest(t, full))
	if err != nil {
		t.Fatal(err)
	}
	staging := stagingDir(dst, m.AppliedIndex)
	if !stagingComplete(staging) {
		t.Fatal("not marked complete")
	}
	files, _ := manifestFiles(m)
	for _, f := range files {
		want, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.name)))
		got, _ := os.ReadFile(filepath.Join(staging, filepath.FromSlash(f.name)))
		if string(want[:f.size]) != string(got) {
			t.Fatalf("staged %s differs from the leader's", f.name)
		}
	}
	if holds, _ := filepath.Glob(filepath.Join(dst, holdPrefix+"*")); len(holds) != 0 {
		t.Fatalf("hold directories left after the install: %v", holds)
	}

	// A reference to a copy this node no longer holds (it restarted, or a
	// newer question replaced the hold) fails the install.
	os.RemoveAll(staging)
	dst2 := t.TempDir()
	copyPartitions(t, dir, dst2)
	held2 := newHoldSet(dst2)
	r = open()
	if _, _, err := r.dedupe(ctx, func(want []HeldFile) ([]HeldFile, error) { return held2.answer(ctx, want) }); err != nil {
		t.Fatal(err)
	}
	stream, _ = io.ReadAll(r)
	if err := held2.clear(); err != nil {
		t.Fatal(err)
	}
	if err := sinkResultHeld(t, dst2, stream, held2); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Fatalf("install from a released hold: %v", err)
	}
	noInstallLeft(t, dst2)
}

func mustManifest(t *testing.T, stream []byte) []byte {
	t.Helper()
	raw, err := readSnapManifest(bytesReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
