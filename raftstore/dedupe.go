package raftstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
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

// HeldSegments answers a leader's question: of the files in want, those
// this node holds sealed at exactly the size asked, with their checksums
// (hold.go).
func (s *Store) HeldSegments(ctx context.Context, want []HeldFile) ([]HeldFile, error) {
	return s.held.answer(ctx, want)
}

// dedupe asks the follower which files it holds and turns those whose
// checksum matches the leader's pinned copy into references. It pins the
// files first, so the checksums stay true for the transfer.
func (r *fileStreamReader) dedupe(ctx context.Context, ask func([]HeldFile) ([]HeldFile, error)) (reused int, saved int64, err error) {
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
		sum, err := r.pinnedSum(ctx, f)
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

func (r *fileStreamReader) pinnedSum(ctx context.Context, f snapFile) ([sha256.Size]byte, error) {
	fh, err := os.Open(r.path(f))
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("snapshot segment %s: %w", f.name, err)
	}
	defer fh.Close()
	return hashPrefix(ctx, fh, f.name, f.size)
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
	// stop ends a question and the hashing when the store closes.
	stop <-chan struct{}
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
			go func() {
				select {
				case <-t.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			reused, saved, err := r.dedupe(ctx, func(want []HeldFile) ([]HeldFile, error) { return t.ask(ctx, int32(node), want) })
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
