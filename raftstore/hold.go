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
	"strings"
	"sync"
)

// A follower's held files: when a leader asks which of a snapshot's segment
// files this node holds, each sealed one of the right size is hard-linked
// into a hold directory first and hashed there. The link pins those exact
// bytes (sealed segments are never appended to, and a deletion only
// unlinks the original), so when the stream's reference arrives the sink
// just links the held copy into staging: no second hash while the leader's
// transfer deadline runs, and no window in which the file could change
// between the hash and the link. One hold directory exists at a time; a
// new question replaces it, an install clears it, and a start removes any
// a crash left.

// holdPrefix names a hold directory in the data directory.
const holdPrefix = ".held."

type holdEntry struct {
	size int64
	sum  [sha256.Size]byte
}

type holdSet struct {
	dataDir string
	// sem lets one question hash at a time; a waiting one gives up when
	// its context ends.
	sem   chan struct{}
	mu    sync.Mutex
	dir   string
	files map[string]holdEntry
}

func newHoldSet(dataDir string) *holdSet {
	return &holdSet{dataDir: dataDir, sem: make(chan struct{}, 1)}
}

// answer holds and hashes the files of want this node has sealed at
// exactly the size asked, and returns them with their checksums.
func (h *holdSet) answer(ctx context.Context, want []HeldFile) ([]HeldFile, error) {
	if len(want) > maxHeldQuery {
		return nil, fmt.Errorf("%w: %d files asked (at most %d)", errBadSnapshot, len(want), maxHeldQuery)
	}
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.sem }()
	dir, err := os.MkdirTemp(h.dataDir, holdPrefix)
	if err != nil {
		return nil, fmt.Errorf("create hold directory: %w", err)
	}
	files := map[string]holdEntry{}
	var out []HeldFile
	for _, w := range want {
		if _, dup := files[w.Name]; dup || checkSnapFileName(w.Name) != nil || w.Size <= 0 || w.Size > maxSnapFileBytes {
			continue
		}
		e, ok, err := h.hold(ctx, dir, w)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		if ok {
			files[w.Name] = e
			out = append(out, HeldFile{Name: w.Name, Size: w.Size, SHA256: hex.EncodeToString(e.sum[:])})
		}
	}
	h.replace(dir, files)
	return out, nil
}

// hold links one file into dir and hashes the link; ok is false when this
// node does not hold it sealed at that size.
func (h *holdSet) hold(ctx context.Context, dir string, w HeldFile) (holdEntry, bool, error) {
	src := filepath.Join(h.dataDir, filepath.FromSlash(w.Name))
	active, err := isActiveSegment(src)
	if err != nil || active {
		return holdEntry{}, false, nil // a partition this node lacks, or a segment still written to
	}
	dst := filepath.Join(dir, holdName(w.Name))
	if err := os.Link(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return holdEntry{}, false, nil
		}
		return holdEntry{}, false, fmt.Errorf("hold %s: %w", w.Name, err)
	}
	f, err := os.Open(dst)
	if err != nil {
		return holdEntry{}, false, fmt.Errorf("hold %s: %w", w.Name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return holdEntry{}, false, fmt.Errorf("hold %s: %w", w.Name, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != w.Size {
		return holdEntry{}, false, os.Remove(dst)
	}
	sum, err := hashPrefix(ctx, f, w.Name, w.Size)
	if err != nil {
		return holdEntry{}, false, err
	}
	return holdEntry{size: w.Size, sum: sum}, true, nil
}

// holdName flattens "<partition dir>/<file>" into one file name.
func holdName(name string) string { return strings.ReplaceAll(name, "/", "_") }

// replace makes dir the hold directory, removing the one before.
func (h *holdSet) replace(dir string, files map[string]holdEntry) {
	h.mu.Lock()
	old := h.dir
	h.dir, h.files = dir, files
	h.mu.Unlock()
	if old != "" {
		_ = os.RemoveAll(old)
	}
}

// clear removes the hold directory (after an install, or at start).
func (h *holdSet) clear() error {
	h.replace("", nil)
	ents, err := os.ReadDir(h.dataDir)
	if err != nil {
		return fmt.Errorf("read data dir: %w", err)
	}
	h.mu.Lock()
	cur := filepath.Base(h.dir)
	h.mu.Unlock()
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), holdPrefix) && e.Name() != cur {
			if err := os.RemoveAll(filepath.Join(h.dataDir, e.Name())); err != nil {
				return fmt.Errorf("remove %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// stage links the held copy of name into staging, if it is held at size
// with checksum sum.
func (h *holdSet) stage(name string, size int64, sum []byte, dst string) error {
	h.mu.Lock()
	e, ok := h.files[name]
	dir := h.dir
	h.mu.Unlock()
	if !ok || e.size != size || string(e.sum[:]) != string(sum) {
		return fmt.Errorf("the leader referred to a held copy of %s that this node does not hold (it restarted, or a newer question replaced it)", name)
	}
	if err := os.Link(filepath.Join(dir, holdName(name)), dst); err != nil {
		return fmt.Errorf("stage the held copy of %s: %w", name, err)
	}
	// Its bytes may still be only in the page cache.
	return syncFile(dst)
}

// hashPrefix hashes the first size bytes of f, checking ctx between
// chunks.
func hashPrefix(ctx context.Context, f *os.File, name string, size int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	r := io.NewSectionReader(f, 0, size)
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return sum, fmt.Errorf("hash %s: %w", name, err)
		}
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
