package raftstore

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brokerd/brokerd/log"
	"github.com/brokerd/brokerd/topic"
)

// A snapshot stream is what raft stores and sends for a snapshot:
//
//	magic "BRKDSNAP" | version u32 | flags u32 | manifest length u64 | manifest (JSON)
//	then, with flagFiles, one record per segment file:
//	    name length u16 | name "<topic>-<partition>/<base>.log" | size u64 | bytes
//	or, for a file the follower said it holds (dedupe.go), a reference:
//	    name length u16 | name | size u64 with refBit set | SHA-256 (32 bytes)
//	end: name length 0 (u16)
//
// A snapshot taken locally is stored without files: it is a manifest of a
// few KB however much data the node holds. When raft sends it to a follower
// that fell behind, the store's Open adds the segment files the manifest
// names, read from the live logs (snapstore.go); the follower's sink writes
// them into a staging directory and stores the manifest alone again.

const (
	snapMagic   = "BRKDSNAP"
	snapVersion = 1
	// flagFiles marks a stream that carries segment files.
	flagFiles = 1
	// snapHeadSize is magic, version, flags and the manifest length.
	snapHeadSize = 8 + 4 + 4 + 8
	// maxManifestBytes bounds what a stream may declare for its manifest.
	maxManifestBytes = 256 << 20
	// manifestInitialCap is what a receiver allocates for a manifest
	// before its bytes arrive.
	manifestInitialCap = 64 << 10
	// maxSnapFileBytes bounds one segment file in a stream.
	maxSnapFileBytes = 1 << 40
)

var errBadSnapshot = errors.New("malformed snapshot stream")

// snapHead encodes a stream's head.
func snapHead(flags uint32, manifest []byte) []byte {
	b := make([]byte, 0, snapHeadSize+len(manifest))
	b = append(b, snapMagic...)
	b = binary.BigEndian.AppendUint32(b, snapVersion)
	b = binary.BigEndian.AppendUint32(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(len(manifest)))
	return append(b, manifest...)
}

// snapEnd is the end record.
var snapEnd = []byte{0, 0}

// parseSnapHead checks a stream's fixed head and returns its flags and the
// manifest length.
func parseSnapHead(b []byte) (flags uint32, manifestLen uint64, err error) {
	if len(b) < snapHeadSize || string(b[:8]) != snapMagic {
		return 0, 0, fmt.Errorf("%w: bad magic", errBadSnapshot)
	}
	if v := binary.BigEndian.Uint32(b[8:]); v != snapVersion {
		return 0, 0, fmt.Errorf("%w: version %d (this brokerd reads %d)", errBadSnapshot, v, snapVersion)
	}
	flags = binary.BigEndian.Uint32(b[12:])
	manifestLen = binary.BigEndian.Uint64(b[16:])
	if manifestLen > maxManifestBytes {
		return 0, 0, fmt.Errorf("%w: manifest of %d bytes", errBadSnapshot, manifestLen)
	}
	return flags, manifestLen, nil
}

// readSnapManifest reads a stream's head and returns its manifest bytes.
func readSnapManifest(r io.Reader) ([]byte, error) {
	head := make([]byte, snapHeadSize)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, fmt.Errorf("read snapshot head: %w", err)
	}
	_, n, err := parseSnapHead(head)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("read snapshot manifest: %w", err)
	}
	return raw, nil
}

// snapFile is one segment file a stream carries.
type snapFile struct {
	name string // "<topic>-<partition>/<base>.log"
	size int64
}

func (f snapFile) recordSize() int64 { return 2 + int64(len(f.name)) + 8 + f.size }

// manifestFiles lists the segment files a follower needs to hold the
// manifest's partitions: every segment with data at or above the start
// offset, up to the size it had at the snapshot. m has been validated.
func manifestFiles(m *manifest) ([]snapFile, error) {
	keys := make([]string, 0, len(m.Partitions))
	for k := range m.Partitions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []snapFile
	for _, k := range keys {
		mp := m.Partitions[k]
		name, idx, err := parsePartKey(k)
		if err != nil {
			return nil, err
		}
		dir := topic.PartitionDir(name, idx)
		for _, s := range mp.Segments {
			if s.Size <= 0 || s.NextOffset <= mp.StartOffset {
				continue
			}
			out = append(out, snapFile{name: dir + "/" + log.SegmentFileName(s.BaseOffset), size: s.Size})
		}
	}
	return out, nil
}

// checkSnapFileName accepts only "<partition dir>/<20 digits>.log": a
// stream cannot make the follower write anywhere else.
func checkSnapFileName(name string) error {
	dir, file, ok := strings.Cut(name, "/")
	if !ok || !isPartitionDir(dir) || len(file) != 24 || !strings.HasSuffix(file, ".log") {
		return fmt.Errorf("%w: file name %q", errBadSnapshot, name)
	}
	for _, c := range file[:20] {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: file name %q", errBadSnapshot, name)
		}
	}
	return nil
}

// fileStreamReader streams a manifest's segment files after its head.
// When the first is reached, every file is hard-linked into a pin
// directory of its own: that pins the bytes without holding a file
// descriptor per segment, so retention, DeleteRecords or a topic deletion
// that unlinks a segment afterwards does not take it from a transfer under
// way. The files are then read from the pins one at a time. A file
// missing by then, or shorter than the manifest says, fails the transfer
// (raft retries with a newer snapshot). Close removes the pins; a crash
// leaves them to removePins at the next start.
type fileStreamReader struct {
	dataDir string
	// stale is called when a file the manifest names is gone: a newer
	// snapshot is needed for the next attempt.
	stale func()
	// verify checks a partition directory's segments before any of its
	// files is sent: a follower must never be rebuilt from bytes that do
	// not read back. nil: not checked.
	verify   func(partitionDir string) error
	verified map[string]bool
	head     []byte
	files    []snapFile
	pins     string // pin directory, once pinned
	// unpinned: hard links failed (a filesystem without them); the live
	// files are read instead, one at a time.
	unpinned bool
	// refs, when set by dedupe, holds the checksum of each file the
	// follower holds: those are sent as references.
	refs    []*[sha256.Size]byte
	cur     *os.File // file i, open
	i       int      // current file
	hdr     []byte   // pending record header
	left    int64    // data bytes left of file i
	started bool
	tail    []byte
}

// pinPrefix names a pin directory in the data directory.
const pinPrefix = ".snappin."

// pinName is the name of segment file f inside a pin directory.
func pinName(f snapFile) string { return strings.ReplaceAll(f.name, "/", "_") }

// pin hard-links every file into a new pin directory.
func (r *fileStreamReader) pin() error {
	if r.pins != "" || r.unpinned {
		return nil
	}
	dir, err := os.MkdirTemp(r.dataDir, pinPrefix)
	if err != nil {
		return fmt.Errorf("snapshot: create pin directory: %w", err)
	}
	r.pins = dir
	for _, f := range r.files {
		err := os.Link(filepath.Join(r.dataDir, filepath.FromSlash(f.name)), filepath.Join(dir, pinName(f)))
		if errors.Is(err, fs.ErrNotExist) {
			if r.stale != nil {
				r.stale()
			}
			return fmt.Errorf("snapshot segment %s (removed since the snapshot; a newer one is being taken): %w", f.name, err)
		}
		if err != nil {
			// No hard links here: read the live files unpinned. A file
			// removed meanwhile fails the transfer (see nextFile).
			r.pins, r.unpinned = "", true
			if rerr := os.RemoveAll(dir); rerr != nil {
				return fmt.Errorf("snapshot: remove pin directory: %w", rerr)
			}
			return nil
		}
	}
	return nil
}

func (r *fileStreamReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	if !r.started {
		r.started = true
		if len(r.files) > 0 {
			if err := r.pin(); err != nil {
				return 0, err
			}
		}
		if err := r.nextFile(); err != nil {
			return 0, err
		}
	}
	for r.i < len(r.files) {
		if len(r.hdr) > 0 {
			n := copy(p, r.hdr)
			r.hdr = r.hdr[n:]
			return n, nil
		}
		if r.left > 0 {
			want := min(int64(len(p)), r.left)
			off := r.files[r.i].size - r.left
			n, err := r.cur.ReadAt(p[:want], off)
			r.left -= int64(n)
			if n > 0 {
				return n, nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("snapshot segment %s: %w", r.files[r.i].name, err)
		}
		r.i++
		if err := r.nextFile(); err != nil {
			return 0, err
		}
	}
	if len(r.tail) > 0 {
		n := copy(p, r.tail)
		r.tail = r.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// path is where file f is read from: its pin, or the live file.
func (r *fileStreamReader) path(f snapFile) string {
	if r.unpinned {
		return filepath.Join(r.dataDir, filepath.FromSlash(f.name))
	}
	return filepath.Join(r.pins, pinName(f))
}

// nextFile closes the file before i and opens file i from its pin.
func (r *fileStreamReader) nextFile() error {
	if r.cur != nil {
		err := r.cur.Close()
		r.cur = nil
		if err != nil {
			return fmt.Errorf("snapshot segment: %w", err)
		}
	}
	if r.i >= len(r.files) {
		return nil
	}
	f := r.files[r.i]
	if dir, _, ok := strings.Cut(f.name, "/"); ok && r.verify != nil && !r.verified[dir] {
		if err := r.verify(dir); err != nil {
			return fmt.Errorf("snapshot segment %s not sent: %w", f.name, err)
		}
		if r.verified == nil {
			r.verified = map[string]bool{}
		}
		r.verified[dir] = true
	}
	h := binary.BigEndian.AppendUint16(nil, uint16(len(f.name)))
	h = append(h, f.name...)
	if r.isRef(r.i) {
		h = binary.BigEndian.AppendUint64(h, uint64(f.size)|refBit)
		r.hdr = append(h, r.refs[r.i][:]...)
		r.left = 0
		return nil
	}
	fh, err := os.Open(r.path(f))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && r.stale != nil {
			r.stale()
		}
		return fmt.Errorf("snapshot segment %s: %w", f.name, err)
	}
	r.cur = fh
	r.hdr = binary.BigEndian.AppendUint64(h, uint64(f.size))
	r.left = f.size
	return nil
}

func (r *fileStreamReader) Close() error {
	var errs []error
	if r.cur != nil {
		errs = append(errs, r.cur.Close())
		r.cur = nil
	}
	if r.pins != "" {
		errs = append(errs, os.RemoveAll(r.pins))
		r.pins = ""
	}
	return errors.Join(errs...)
}

// removePins removes the pin directories a crash left in dataDir.
func removePins(dataDir string) error {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), pinPrefix) {
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return fmt.Errorf("remove snapshot pins %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}
