package raftstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// snapshotStore is raft's SnapshotStore for brokerd: raft's file store
// holds each snapshot's manifest, and the segment files travel only when a
// snapshot is sent to a follower (see snapstream.go).
type snapshotStore struct {
	inner   *raft.FileSnapshotStore
	dataDir string
	// held is this node's held files, which references stage from.
	held   *holdSet
	logger *slog.Logger
	// stale asks for a new snapshot when the newest one names segment
	// files that retention, DeleteRecords or a topic deletion removed.
	stale func()
	// verify checks the segments of a partition directory before they
	// are sent (Store.verifyForShipping); nil: not checked.
	verify func(partitionDir string) error
}

// stagingPrefix names the directory a snapshot install's segment files are
// written to, ".install.<applied index>" (no "-", so it never parses as a partition directory), before they replace the node's
// partitions.
const stagingPrefix = ".install."

// completeMarker is written into a staging directory once every file in it
// is durable.
const completeMarker = "COMPLETE"

func stagingDir(dataDir string, index uint64) string {
	return filepath.Join(dataDir, stagingPrefix+strconv.FormatUint(index, 10))
}

func stagingComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeMarker))
	return err == nil
}

// Create implements raft.SnapshotStore.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.inner.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &snapshotSink{SnapshotSink: sink, dataDir: s.dataDir, logger: s.logger, held: s.held}, nil
}

// List implements raft.SnapshotStore.
func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) { return s.inner.List() }

// Open implements raft.SnapshotStore. The stream it returns carries the
// manifest and, after it, the segment files the manifest names, so that a
// follower receives everything it lacks; a reader that stops after the
// manifest (Restore) opens none of them.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.inner.Open(id)
	if err != nil {
		return nil, nil, err
	}
	raw, err := readSnapManifest(rc)
	rc.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	files, err := manifestFiles(m)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	head := snapHead(flagFiles, raw)
	size := int64(len(head)) + int64(len(snapEnd))
	for _, f := range files {
		size += f.recordSize()
	}
	out := *meta
	out.Size = size
	return &out, &fileStreamReader{dataDir: s.dataDir, stale: s.stale, verify: s.verify, head: head, files: files, tail: append([]byte(nil), snapEnd...)}, nil
}

// snapshotSink parses a snapshot stream as it is written. It stores the
// head and the manifest (without files) in raft's file store, and writes
// the segment files of a stream that carries them into a staging
// directory, durably, marking it complete on Close. Restore then swaps the
// staging directory in.
type snapshotSink struct {
	raft.SnapshotSink
	dataDir string
	logger  *slog.Logger
	held    *holdSet

	buf      []byte // bytes of a fixed-size part not yet complete
	state    sinkState
	files    bool      // the stream carries files
	manifest []byte    // collected manifest
	m        *manifest // it, decoded and validated once complete
	mleft    uint64
	name     string
	out      *os.File
	left     int64
	staging  string
	// want holds the segment files the manifest names that have not
	// arrived yet, with their sizes.
	want map[string]int64
	err  error
}

type sinkState int8

const (
	sinkHead sinkState = iota
	sinkManifest
	sinkRecordLen
	sinkRecordName
	sinkRecordData
	sinkRecordRef
	sinkDone
)

func (s *snapshotSink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n := len(p)
	if err := s.consume(p); err != nil {
		s.err = err
		return 0, err
	}
	return n, nil
}

// need collects bytes of a fixed-size part; ok once want bytes are in.
func (s *snapshotSink) need(p *[]byte, want int) ([]byte, bool) {
	k := min(want-len(s.buf), len(*p))
	s.buf = append(s.buf, (*p)[:k]...)
	*p = (*p)[k:]
	if len(s.buf) < want {
		return nil, false
	}
	b := s.buf
	s.buf = nil
	return b, true
}

func (s *snapshotSink) consume(p []byte) error {
	for len(p) > 0 {
		switch s.state {
		case sinkHead:
			b, ok := s.need(&p, snapHeadSize)
			if !ok {
				return nil
			}
			flags, n, err := parseSnapHead(b)
			if err != nil {
				return err
			}
			s.files, s.mleft = flags&flagFiles != 0, n
			// The declared length is only a bound: the buffer grows as
			// bytes arrive.
			s.manifest = make([]byte, 0, min(n, manifestInitialCap))
			s.state = sinkManifest
		case sinkManifest:
			k := min(uint64(len(p)), s.mleft)
			s.manifest = append(s.manifest, p[:k]...)
			p, s.mleft = p[k:], s.mleft-k
			if s.mleft > 0 {
				return nil
			}
			// Nothing is stored from a manifest that could not be
			// installed, with files or without.
			m, err := decodeManifest(s.manifest)
			if err != nil {
				return err
			}
			s.m = m
			// The stored snapshot is the manifest alone.
			if _, err := s.SnapshotSink.Write(snapHead(0, s.manifest)); err != nil {
				return err
			}
			if s.files {
				if err := s.startStaging(); err != nil {
					return err
				}
			}
			s.state = sinkRecordLen
		case sinkRecordLen:
			b, ok := s.need(&p, 2)
			if !ok {
				return nil
			}
			n := int(binary.BigEndian.Uint16(b))
			if n == 0 {
				if _, err := s.SnapshotSink.Write(snapEnd); err != nil {
					return err
				}
				s.state = sinkDone
				continue
			}
			if !s.files {
				return fmt.Errorf("%w: a file in a stream without files", errBadSnapshot)
			}
			s.left = int64(n)
			s.state = sinkRecordName
		case sinkRecordName:
			b, ok := s.need(&p, int(s.left)+8)
			if !ok {
				return nil
			}
			s.name = string(b[:s.left])
			size := binary.BigEndian.Uint64(b[s.left:])
			ref := size&refBit != 0
			size &^= refBit
			if err := checkSnapFileName(s.name); err != nil {
				return err
			}
			if want, ok := s.want[s.name]; !ok || uint64(want) != size {
				return fmt.Errorf("%w: file %s of %d bytes is not in the manifest (or not at that size, or sent twice)", errBadSnapshot, s.name, size)
			}
			delete(s.want, s.name)
			if ref {
				s.left = int64(size)
				s.state = sinkRecordRef
				continue
			}
			if err := s.openFile(); err != nil {
				return err
			}
			s.left = int64(size)
			s.state = sinkRecordData
			if s.left == 0 {
				if err := s.closeFile(); err != nil {
					return err
				}
			}
		case sinkRecordData:
			k := min(int64(len(p)), s.left)
			if _, err := s.out.Write(p[:k]); err != nil {
				return fmt.Errorf("write %s: %w", s.name, err)
			}
			p, s.left = p[k:], s.left-k
			if s.left == 0 {
				if err := s.closeFile(); err != nil {
					return err
				}
			}
		case sinkRecordRef:
			b, ok := s.need(&p, sha256.Size)
			if !ok {
				return nil
			}
			if err := s.linkHeld(b); err != nil {
				return err
			}
			s.state = sinkRecordLen
		case sinkDone:
			return fmt.Errorf("%w: bytes after the end", errBadSnapshot)
		}
	}
	return nil
}

// startStaging clears a staging directory for the manifest's index (and
// any left by older installs) and creates it.
// The manifest is validated first: nothing is written from a stream
// whose manifest is malformed.
func (s *snapshotSink) startStaging() error {
	m := s.m
	files, err := manifestFiles(m)
	if err != nil {
		return err
	}
	s.want = make(map[string]int64, len(files))
	for _, f := range files {
		s.want[f.name] = f.size
	}
	if err := removeStaging(s.dataDir); err != nil {
		return err
	}
	s.staging = stagingDir(s.dataDir, m.AppliedIndex)
	if err := os.MkdirAll(s.staging, 0o755); err != nil {
		return fmt.Errorf("create staging directory: %w", err)
	}
	return nil
}

// removeStaging removes every staging directory in dataDir.
func removeStaging(dataDir string) error {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stagingPrefix) && e.Name() != installTrash {
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return fmt.Errorf("remove %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func (s *snapshotSink) openFile() error {
	path := filepath.Join(s.staging, filepath.FromSlash(s.name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", s.name, err)
	}
	s.out = f
	return nil
}

// linkHeld stages this node's held copy of file s.name, of s.left bytes,
// for a reference with checksum sum (hold.go).
func (s *snapshotSink) linkHeld(sum []byte) error {
	if s.held == nil {
		return fmt.Errorf("a reference to a held copy of %s, but this node holds none", s.name)
	}
	dst := filepath.Join(s.staging, filepath.FromSlash(s.name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	return s.held.stage(s.name, s.left, sum, dst)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// isActiveSegment reports whether the .log file at path is the last (the
// active) segment of its partition directory.
func isActiveSegment(path string) (bool, error) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return false, fmt.Errorf("read %s: %w", filepath.Dir(path), err)
	}
	last := ""
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".log") && n > last {
			last = n
		}
	}
	return last == filepath.Base(path), nil
}

func (s *snapshotSink) closeFile() error {
	err := s.out.Sync()
	if cerr := s.out.Close(); err == nil {
		err = cerr
	}
	s.out = nil
	s.state = sinkRecordLen
	if err != nil {
		return fmt.Errorf("write %s: %w", s.name, err)
	}
	return nil
}

// Close implements raft.SnapshotSink: a stream that ended properly is
// stored, and its staging directory made durable and marked complete.
func (s *snapshotSink) Close() error {
	if s.err == nil && s.state != sinkDone {
		s.err = fmt.Errorf("%w: stream ended early", errBadSnapshot)
	}
	if s.err == nil && s.files {
		s.err = s.sealStaging()
	}
	if s.err == nil && s.held != nil {
		// Staged links keep the held bytes; the hold has served.
		s.held.replace("", nil)
	}
	if s.err != nil {
		_ = s.Cancel()
		return s.err
	}
	return s.SnapshotSink.Close()
}

func (s *snapshotSink) sealStaging() error {
	if len(s.want) > 0 {
		return fmt.Errorf("%w: %d segment files the manifest names did not arrive", errBadSnapshot, len(s.want))
	}
	if err := checkStaged(s.staging, s.m); err != nil {
		return err
	}
	ents, err := os.ReadDir(s.staging)
	if err != nil {
		return fmt.Errorf("read staging directory: %w", err)
	}
	for _, e := range ents {
		if err := log.SyncDir(filepath.Join(s.staging, e.Name())); err != nil {
			return err
		}
	}
	if err := log.WriteFileAtomic(s.staging, completeMarker, nil); err != nil {
		return err
	}
	return log.SyncDir(s.dataDir)
}

// Cancel implements raft.SnapshotSink.
func (s *snapshotSink) Cancel() error {
	if s.out != nil {
		s.out.Close()
		s.out = nil
	}
	if s.staging != "" {
		if err := os.RemoveAll(s.staging); err != nil {
			s.logger.Warn("remove staging directory", "dir", s.staging, "err", err)
		}
	}
	return s.SnapshotSink.Cancel()
}

// checkStaged compares a staging directory with the segment files manifest
// m names: each is present at exactly its size, and nothing else is there.
// It runs before the directory is marked complete and again before an
// install starts, so a short or mixed-up transfer never replaces the
// node's data.
func checkStaged(staging string, m *manifest) error {
	files, err := manifestFiles(m)
	if err != nil {
		return err
	}
	want := make(map[string]int64, len(files))
	for _, f := range files {
		want[f.name] = f.size
	}
	dirs, err := os.ReadDir(staging)
	if err != nil {
		return fmt.Errorf("read staging directory: %w", err)
	}
	for _, d := range dirs {
		if d.Name() == completeMarker {
			continue
		}
		if !d.IsDir() || !isPartitionDir(d.Name()) {
			return fmt.Errorf("%w: staging directory holds %s", errBadSnapshot, d.Name())
		}
		ents, err := os.ReadDir(filepath.Join(staging, d.Name()))
		if err != nil {
			return fmt.Errorf("read staging directory: %w", err)
		}
		for _, e := range ents {
			name := d.Name() + "/" + e.Name()
			size, ok := want[name]
			if !ok {
				return fmt.Errorf("%w: staged file %s is not in the manifest", errBadSnapshot, name)
			}
			fi, err := e.Info()
			if err != nil {
				return fmt.Errorf("stat staged %s: %w", name, err)
			}
			if !fi.Mode().IsRegular() || fi.Size() != size {
				return fmt.Errorf("%w: staged file %s holds %d bytes, the manifest says %d", errBadSnapshot, name, fi.Size(), size)
			}
			delete(want, name)
		}
	}
	for name := range want {
		return fmt.Errorf("%w: segment file %s (and %d more) did not arrive", errBadSnapshot, name, len(want)-1)
	}
	return nil
}

var errNoStaging = errors.New("the snapshot's segment files did not arrive")

// verifyForShipping checks every segment of the partition in dir that
// this node has not checked since it started (log.Log.VerifyAll, unpaced),
// before a snapshot sends its files: damage stops the transfer (and the
// node, through the damage handler) rather than spread. A partition no
// longer here is left to the transfer, which fails on its missing files.
func (s *Store) verifyForShipping(dir string) error {
	s.fsm.mu.RLock()
	var l *log.Log
	for name, ts := range s.fsm.topics {
		for i, p := range ts.parts {
			if topic.PartitionDir(name, int32(i)) == dir {
				l = p.log
			}
		}
	}
	s.fsm.mu.RUnlock()
	if l == nil {
		return nil
	}
	if err := l.VerifyAll(context.Background(), nil); err != nil && !errors.Is(err, log.ErrClosed) {
		return err
	}
	return nil
}
