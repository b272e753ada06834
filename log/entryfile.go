package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// searchChunk is the number of entries below which a search reads the rest
// of its range with one pread instead of probing entry by entry.
const searchChunk = 256

// entryFile is an on-disk array of fixed-width entries, appended by the
// single writer and searched by concurrent readers with pread. The entry
// count is published after the entry's bytes are written.
type entryFile struct {
	f     *os.File
	path  string
	width int64
	n     atomic.Int64
}

// openEntryFile opens an entry file, creating it if it is missing and
// mayCreate; existed reports whether it was already there and size is its
// length in bytes.
func openEntryFile(path string, width int64, mayCreate bool) (e *entryFile, size int64, existed bool, err error) {
	existed = true
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) && mayCreate {
		existed = false
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("open index: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, fmt.Errorf("stat index %s: %w", path, err)
	}
	e = &entryFile{f: f, path: path, width: width}
	e.n.Store(st.Size() / width)
	return e, st.Size(), existed, nil
}

// intact reports whether an opened entry file existed and holds whole entries.
func intact(size int64, existed bool, width int64) bool { return existed && size%width == 0 }

func (e *entryFile) entries() int64 { return e.n.Load() }

func (e *entryFile) append(entry []byte) error {
	n := e.n.Load()
	if _, err := e.f.WriteAt(entry, n*e.width); err != nil {
		return fmt.Errorf("write index %s: %w", e.path, err)
	}
	e.n.Store(n + 1)
	return nil
}

func (e *entryFile) read(i int64, buf []byte) error {
	if _, err := e.f.ReadAt(buf[:e.width], i*e.width); err != nil {
		return fmt.Errorf("read index %s entry %d: %w", e.path, i, err)
	}
	return nil
}

// truncate keeps the first n entries.
func (e *entryFile) truncate(n int64) error {
	if err := e.f.Truncate(n * e.width); err != nil {
		return fmt.Errorf("truncate index %s: %w", e.path, err)
	}
	e.n.Store(n)
	return nil
}

// search returns the largest i below n for which ok(entry i) holds, or -1,
// and copies that entry into out. ok must hold for a prefix of the entries
// and fail for the rest.
func (e *entryFile) search(n int64, ok func(entry []byte) bool, out []byte) (int64, error) {
	lo, hi := int64(-1), n // ok(lo) holds (or lo is -1); ok(hi) fails (or hi is n)
	var probe [16]byte
	for hi-lo > searchChunk {
		mid := lo + (hi-lo)/2
		if err := e.read(mid, probe[:]); err != nil {
			return 0, err
		}
		if ok(probe[:e.width]) {
			lo = mid
			copy(out, probe[:e.width])
		} else {
			hi = mid
		}
	}
	if hi-lo <= 1 {
		return lo, nil
	}
	buf := make([]byte, (hi-lo-1)*e.width)
	if _, err := e.f.ReadAt(buf, (lo+1)*e.width); err != nil {
		return 0, fmt.Errorf("read index %s: %w", e.path, err)
	}
	found := lo
	for i := int64(0); i < hi-lo-1; i++ {
		entry := buf[i*e.width : (i+1)*e.width]
		if !ok(entry) {
			break
		}
		found = lo + 1 + i
		copy(out, entry)
	}
	return found, nil
}

func (e *entryFile) sync() error {
	if err := e.f.Sync(); err != nil {
		return fmt.Errorf("sync index %s: %w", e.path, err)
	}
	return nil
}

func (e *entryFile) close() error {
	if err := e.f.Close(); err != nil {
		return fmt.Errorf("close index %s: %w", e.path, err)
	}
	return nil
}
