package raftstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshot install without resending what the follower holds. Before the
// leader streams a snapshot to a follower, it asks the follower (through
// Config.AskHeld, the admin API) which of the snapshot's segment files it
// already holds at exactly the size the manifest records, with their
// SHA-256. Each file whose checksum matches the leader's own is sent as a
// reference, name, size and checksum, instead of its bytes; the follower's
// sink checks its own file against the checksum again and hard-links it
// into the staging directory. A follower that cannot answer gets every
// file.

// HeldFile is one segment file a node holds: "<partition dir>/<base>.log",
// its size and, in answers, its SHA-256 in hex.
type HeldFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

// maxHeldQuery bounds the files one held-files query may name.
const maxHeldQuery = 1 << 20

// refBit marks a file record that refers to the follower's own copy: the
// size field has it set and 32 bytes of SHA-256 follow instead of data.
const refBit = uint64(1) << 63

// heldMu lets one held-files query hash at a time.
var heldMu sync.Mutex

// HeldSegments answers a leader's question: of the files in want, those
// this node holds at exactly the size asked, with their checksums.
func (s *Store) HeldSegments(ctx context.Context, want []HeldFile) ([]HeldFile, error) {
	return heldSegments(ctx, s.cfg.DataDir, want)
}

func heldSegments(ctx context.Context, dataDir string, want []HeldFile) ([]HeldFile, error) {
	if len(want) > maxHeldQuery {
		return nil, fmt.Errorf("%w: %d files asked (at most %d)", errBadSnapshot, len(want), maxHeldQuery)
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	var out []HeldFile
	for _, w := range want {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if checkSnapFileName(w.Name) != nil || w.Size <= 0 {
			continue
		}
		sum, err := fileSum(filepath.Join(dataDir, filepath.FromSlash(w.Name)), w.Size)
		if errors.Is(err, errSizeDiffers) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, HeldFile{Name: w.Name, Size: w.Size, SHA256: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

var errSizeDiffers = errors.New("file size differs")

// fileSum hashes the file at path, which must be exactly size bytes.
func fileSum(path string, size int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sum, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return sum, errSizeDiffers
	}
	return prefixSum(f, path, size)
}

// prefixSum hashes the first size bytes of f.
func prefixSum(f *os.File, path string, size int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return sum, fmt.Errorf("hash %s: %w", path, err)
	}
	if n := h.Size(); n != len(sum) {
		return sum, fmt.Errorf("hash %s: size %d", path, n)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// dedupe asks the follower which files it holds and turns those whose
// checksum matches the leader's pinned copy into references. It pins the
// files first, so the checksums stay true for the transfer.
func (r *fileStreamReader) dedupe(ask func([]HeldFile) ([]HeldFile, error)) (reused int, saved int64, err error) {
	if len(r.files) == 0 {
		return 0, 0, nil
	}
	if err := r.pin(); err != nil {
		return 0, 0, err
	}
	want := make([]HeldFile, len(r.files))
	for i, f := range r.files {
		want[i] = HeldFile{Name: f.name, Size: f.size}
	}
	held, err := ask(want)
	if err != nil {
		return 0, 0, err
	}
	sums := make(map[string]HeldFile, len(held))
	for _, h := range held {
		sums[h.Name] = h
	}
	r.refs = make([]*[sha256.Size]byte, len(r.files))
	for i, f := range r.files {
		h, ok := sums[f.name]
		if !ok || h.Size != f.size {
			continue
		}
		sum, err := r.pinnedSum(f)
		if err != nil {
			return 0, 0, err
		}
		if hex.EncodeToString(sum[:]) == h.SHA256 {
			r.refs[i] = &sum
			reused++
			saved += f.size
		}
	}
	return reused, saved, nil
}

func (r *fileStreamReader) pinnedSum(f snapFile) ([sha256.Size]byte, error) {
	fh, err := os.Open(r.path(f))
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("snapshot segment %s: %w", f.name, err)
	}
	defer fh.Close()
	return prefixSum(fh, f.name, f.size)
}

// size is the stream's length in bytes, references counted as such.
func (r *fileStreamReader) size() int64 {
	n := int64(len(r.head)) + int64(len(r.tail))
	for i, f := range r.files {
		if r.isRef(i) {
			n += 2 + int64(len(f.name)) + 8 + sha256.Size
		} else {
			n += f.recordSize()
		}
	}
	return n
}

func (r *fileStreamReader) isRef(i int) bool { return r.refs != nil && r.refs[i] != nil }

// dedupTransport is raft's transport with InstallSnapshot deduplicated.
type dedupTransport struct {
	*raft.NetworkTransport
	logger interface{ Info(string, ...any) }
	ask    func(ctx context.Context, node int32, want []HeldFile) ([]HeldFile, error)
}

// heldQueryTimeout bounds a held-files query; the follower hashes every
// file it holds of the snapshot's.
const heldQueryTimeout = 5 * time.Minute

func (t *dedupTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if r, ok := data.(*fileStreamReader); ok && t.ask != nil {
		if node, err := strconv.Atoi(string(id)); err == nil {
			// Pinned first: the checksums must stay true for the transfer.
			if err := r.pin(); err != nil {
				return fmt.Errorf("snapshot to node %s: %w", id, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), heldQueryTimeout)
			reused, saved, err := r.dedupe(func(want []HeldFile) ([]HeldFile, error) { return t.ask(ctx, int32(node), want) })
			cancel()
			switch {
			case err != nil:
				t.logger.Info("sending every segment file of the snapshot: the follower's held files are unknown", "node_id", node, "err", err)
				r.refs = nil
			default:
				t.logger.Info("sending a snapshot", "node_id", node, "files", len(r.files), "reused", reused, "bytes_not_sent", saved)
			}
			args.Size = r.size()
		}
	}
	return t.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
}
