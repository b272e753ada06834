package raftstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/internal/batchtest"
	"github.com/brokerd/brokerd/topic"
)

// sampleStream returns the stream a leader sends for a store holding two
// partitions over several segments each, and its decoded manifest.
func sampleStream(t *testing.T) ([]byte, *manifest) {
	t.Helper()
	src := openTuned(t, t.TempDir(), func(c *Config) { c.Defaults = topic.Defaults{"segment.bytes": "2048"} })
	t.Cleanup(func() { src.Close() })
	if err := src.CreateTopic(context.Background(), "i", topic.NewID(), 2, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		produce(t, src, "i", int32(i%2), batchtest.NoProducer, strings.Repeat("v", 100))
	}
	stream, _ := streamSnapshot(t, src)
	raw, err := readSnapManifest(bytesReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return stream, &m
}

// splitStream cuts a stream into its manifest and its file records (each
// record whole, the end record excluded).
func splitStream(t *testing.T, stream []byte) (manifest []byte, records [][]byte) {
	t.Helper()
	_, n, err := parseSnapHead(stream)
	if err != nil {
		t.Fatal(err)
	}
	manifest = stream[snapHeadSize : snapHeadSize+n]
	rest := stream[snapHeadSize+n:]
	for {
		l := int(binary.BigEndian.Uint16(rest))
		if l == 0 {
			return manifest, records
		}
		size := int(binary.BigEndian.Uint64(rest[2+l:]))
		end := 2 + l + 8 + size
		records = append(records, rest[:end])
		rest = rest[end:]
	}
}

func joinStream(manifest []byte, records [][]byte) []byte {
	b := snapHead(flagFiles, manifest)
	for _, r := range records {
		b = append(b, r...)
	}
	return append(b, snapEnd...)
}

// sinkResult feeds stream to a fresh sink in dataDir and returns the first
// error of Write or Close.
func sinkResult(t *testing.T, dataDir string, stream []byte) error {
	t.Helper()
	return sinkResultHeld(t, dataDir, stream, nil)
}

// sinkResultHeld is sinkResult on a node whose held files are held.
func sinkResultHeld(t *testing.T, dataDir string, stream []byte, held *holdSet) error {
	t.Helper()
	snaps := &snapshotStore{inner: mustFileSnaps(t, dataDir), dataDir: dataDir, logger: testLogger(), held: held}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, 100, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	for len(stream) > 0 {
		n := min(len(stream), 777)
		if _, err := sink.Write(stream[:n]); err != nil {
			sink.Close()
			return err
		}
		stream = stream[n:]
	}
	return sink.Close()
}

// noInstallLeft checks that a refused stream left nothing an install or a
// restart would act on.
func noInstallLeft(t *testing.T, dataDir string) {
	t.Helper()
	ents, _ := os.ReadDir(dataDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stagingPrefix) || e.Name() == installMarker {
			t.Fatalf("a refused stream left %s", e.Name())
		}
	}
	list, err := mustFileSnaps(t, dataDir).List()
	if err != nil || len(list) != 0 {
		t.Fatalf("a refused stream was stored as a snapshot: %v %v", list, err)
	}
}

// TestSinkRefusesBadManifest: a stream whose manifest could not be
// installed (a partition key without "/" panicked at every restart; one
// with ".." wrote outside the data directory) is refused before anything
// is written from it.
func TestSinkRefusesBadManifest(t *testing.T) {
	stream, m := sampleStream(t)
	_, records := splitStream(t, stream)
	rekey := func(from, to string) func(*manifest) {
		return func(m *manifest) { m.Partitions[to] = m.Partitions[from]; delete(m.Partitions, from) }
	}
	cases := map[string]func(*manifest){
		"key without slash":   rekey("i/0", "i0"),
		"key escaping":        rekey("i/0", "../../x/0"),
		"key of no topic":     rekey("i/0", "j/0"),
		"partition too high":  rekey("i/0", "i/2"),
		"padded partition":    rekey("i/0", "i/00"),
		"negative partition":  rekey("i/0", "i/-1"),
		"partition missing":   func(m *manifest) { delete(m.Partitions, "i/1") },
		"topic name dots":     func(m *manifest) { m.Topics[0].Name = ".."; rekey("i/0", "../0")(m); rekey("i/1", "../1")(m) },
		"too many partitions": func(m *manifest) { m.Topics[0].Partitions = maxPartitions + 1 },
		"segments disordered": func(m *manifest) {
			p := m.Partitions["i/0"]
			p.Segments[0], p.Segments[1] = p.Segments[1], p.Segments[0]
		},
		"negative start":         func(m *manifest) { p := m.Partitions["i/0"]; p.StartOffset = -5; m.Partitions["i/0"] = p },
		"transaction without id": func(m *manifest) { m.Txns = append(m.Txns, &TxnState{}) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			var c manifest
			raw, _ := json.Marshal(m)
			json.Unmarshal(raw, &c)
			mutate(&c)
			bad, err := json.Marshal(&c)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			err = sinkResult(t, dir, joinStream(bad, records))
			if !errors.Is(err, errBadSnapshot) {
				t.Fatalf("sink accepted the manifest: %v", err)
			}
			noInstallLeft(t, dir)
			// Nor stored from a stream without files.
			dir = t.TempDir()
			if err := sinkResult(t, dir, append(snapHead(0, bad), snapEnd...)); !errors.Is(err, errBadSnapshot) {
				t.Fatalf("sink accepted the manifest in a stream without files: %v", err)
			}
			noInstallLeft(t, dir)
			if err := c.validate(); err == nil {
				t.Fatal("validate accepted it")
			}
		})
	}
	if err := m.validate(); err != nil {
		t.Fatalf("a real manifest fails: %v", err)
	}
}

// TestSinkManifestGrows: the declared manifest length is a bound, not an
// allocation; a peer declaring the maximum and sending nothing more costs
// the receiver little.
func TestSinkManifestGrows(t *testing.T) {
	dir := t.TempDir()
	snaps := &snapshotStore{inner: mustFileSnaps(t, dir), dataDir: dir, logger: testLogger()}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, 100, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Cancel()
	head := snapHead(flagFiles, nil)
	binary.BigEndian.PutUint64(head[16:], maxManifestBytes)
	if _, err := sink.Write(append(head, '{')); err != nil {
		t.Fatal(err)
	}
	if c := cap(sink.(*snapshotSink).manifest); c > manifestInitialCap {
		t.Fatalf("a declared manifest of %d bytes allocated %d upfront", maxManifestBytes, c)
	}
	binary.BigEndian.PutUint64(head[16:], maxManifestBytes+1)
	if err := sinkResult(t, t.TempDir(), head); !errors.Is(err, errBadSnapshot) {
		t.Fatalf("a manifest over the bound was accepted: %v", err)
	}
}

// TestSinkChecksFiles: the staged files must be exactly those the manifest
// names, at their sizes, before the staging directory is marked complete:
// a short transfer would otherwise replace the node's data with less.
func TestSinkChecksFiles(t *testing.T) {
	stream, _ := sampleStream(t)
	raw, records := splitStream(t, stream)
	if len(records) < 3 {
		t.Fatalf("want several segment files, have %d", len(records))
	}
	resize := func(r []byte, size int) []byte {
		l := int(binary.BigEndian.Uint16(r))
		out := append([]byte(nil), r[:2+l]...)
		out = binary.BigEndian.AppendUint64(out, uint64(size))
		return append(out, r[2+l+8:][:min(size, len(r)-2-l-8)]...)
	}
	cases := map[string][][]byte{
		"a file missing": records[:len(records)-1],
		"a file twice":   append(append([][]byte(nil), records...), records[0]),
		"a file short":   append([][]byte{resize(records[0], 10)}, records[1:]...),
	}
	for name, recs := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := sinkResult(t, dir, joinStream(raw, recs)); !errors.Is(err, errBadSnapshot) {
				t.Fatalf("sink accepted it: %v", err)
			}
			noInstallLeft(t, dir)
		})
	}
	t.Run("whole", func(t *testing.T) {
		dir := t.TempDir()
		if err := sinkResult(t, dir, stream); err != nil {
			t.Fatal(err)
		}
		m, err := decodeManifest(raw)
		if err != nil {
			t.Fatal(err)
		}
		staging := stagingDir(dir, m.AppliedIndex)
		if !stagingComplete(staging) {
			t.Fatal("a whole stream was not marked complete")
		}
		// A staged file that changed afterwards fails the check that
		// runs again before an install.
		files, _ := manifestFiles(m)
		if err := os.Truncate(filepath.Join(staging, files[0].name), 1); err != nil {
			t.Fatal(err)
		}
		if err := checkStaged(staging, m); !errors.Is(err, errBadSnapshot) {
			t.Fatalf("checkStaged accepted a truncated file: %v", err)
		}
	})
}
