package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// checkpointName is the partition's checkpoint file.
const checkpointName = "log.checkpoint"

const checkpointHeader = "brokerd-log-checkpoint 1"

// checkpoint is what the log persists besides its segments.
type checkpoint struct {
	// StartOffset is the log start offset; it may lie inside a segment.
	StartOffset int64
	// RecoveryPoint is the end offset as of the last flush: everything
	// below it is on disk, so Open need not scan it.
	RecoveryPoint int64
	// ActiveBase and ActiveCreated are the active segment at the last flush
	// and the caller's time of its first append (-1 if none), so segment.ms
	// rolls at the same point after a restart.
	ActiveBase    int64
	ActiveCreated int64
}

func (c checkpoint) encode() []byte {
	return fmt.Appendf(nil, "%s\nstart-offset %d\nrecovery-point %d\nactive-segment %d %d\n",
		checkpointHeader, c.StartOffset, c.RecoveryPoint, c.ActiveBase, c.ActiveCreated)
}

// parseCheckpoint decodes the file written by encode, strictly.
func parseCheckpoint(b []byte) (checkpoint, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) != 5 || lines[4] != "" || lines[0] != checkpointHeader {
		return checkpoint{}, errors.New("not a log checkpoint")
	}
	var c checkpoint
	fields := []struct {
		name string
		dst  []*int64
	}{
		{"start-offset", []*int64{&c.StartOffset}},
		{"recovery-point", []*int64{&c.RecoveryPoint}},
		{"active-segment", []*int64{&c.ActiveBase, &c.ActiveCreated}},
	}
	for i, f := range fields {
		words := strings.Split(lines[i+1], " ")
		if len(words) != len(f.dst)+1 || words[0] != f.name {
			return checkpoint{}, fmt.Errorf("line %d: want %q with %d values", i+2, f.name, len(f.dst))
		}
		for j, dst := range f.dst {
			v, err := strconv.ParseInt(words[j+1], 10, 64)
			if err != nil {
				return checkpoint{}, fmt.Errorf("%s: %w", f.name, err)
			}
			*dst = v
		}
	}
	if c.StartOffset < 0 || c.RecoveryPoint < 0 || c.ActiveBase < -1 || c.ActiveCreated < -1 {
		return checkpoint{}, errors.New("negative offset in log checkpoint")
	}
	return c, nil
}

// errBadCheckpoint reports a checkpoint file that does not parse.
var errBadCheckpoint = errors.New("bad log checkpoint")

// readCheckpoint reads dir's checkpoint; found is false if there is none.
func readCheckpoint(dir string) (c checkpoint, found bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("read log checkpoint: %w", err)
	}
	c, err = parseCheckpoint(b)
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("%w: %s: %w", errBadCheckpoint, filepath.Join(dir, checkpointName), err)
	}
	return c, true, nil
}

// writeCheckpoint replaces dir's checkpoint atomically and durably.
func writeCheckpoint(dir string, c checkpoint) error {
	return writeFileAtomic(dir, checkpointName, c.encode())
}

// writeFileAtomic writes data to dir/name through a synced temporary file
// and a rename, then syncs the directory.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return SyncDir(dir)
}

const tmpSuffix = ".tmp"

// SyncDir fsyncs a directory, making renames, creations and removals in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
