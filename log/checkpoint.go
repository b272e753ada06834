package log

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// checkpointName is the partition's checkpoint file.
const checkpointName = "log.checkpoint"

// The checkpoint file is text: a header line, then one "name values..."
// line per field, every line ending in a newline.
//
// Version 2 (written):
//
//	brokerd-log-checkpoint 2
//	start-offset <offset>
//	recovery-point <offset>
//	segment-created <base> <created>   (zero or more, ascending base)
//
// Version 1 (still read) has a single "active-segment <base> <created>" line
// in place of the segment-created lines, with -1 for none or unknown.
const (
	checkpointHeader   = "brokerd-log-checkpoint 2"
	checkpointHeaderV1 = "brokerd-log-checkpoint 1"
)

// checkpoint is what the log persists besides its segments.
type checkpoint struct {
	// StartOffset is the log start offset; it may lie inside a segment.
	StartOffset int64
	// RecoveryPoint is the end offset as of the last flush: everything
	// below it is on disk, so Open need not scan it.
	RecoveryPoint int64
	// Created lists, by strictly ascending base, the segments whose first
	// append time is known, so that segment.ms rolls at the same point
	// after a restart, even once a truncation makes a sealed segment the
	// active one again.
	Created []segmentCreated
}

// segmentCreated is a segment's base offset and the caller's time (unix ms)
// of its first append.
type segmentCreated struct {
	Base    int64
	Created int64
}

// equal reports whether c and o would encode identically.
func (c checkpoint) equal(o checkpoint) bool {
	return c.StartOffset == o.StartOffset && c.RecoveryPoint == o.RecoveryPoint &&
		slices.Equal(c.Created, o.Created)
}

// createdOf returns the recorded first append time of the segment at base.
func (c checkpoint) createdOf(base int64) (created int64, ok bool) {
	i, ok := slices.BinarySearchFunc(c.Created, base, func(e segmentCreated, base int64) int {
		return cmp.Compare(e.Base, base)
	})
	if !ok {
		return -1, false
	}
	return c.Created[i].Created, true
}

func (c checkpoint) encode() []byte {
	b := fmt.Appendf(nil, "%s\nstart-offset %d\nrecovery-point %d\n", checkpointHeader, c.StartOffset, c.RecoveryPoint)
	for _, e := range c.Created {
		b = fmt.Appendf(b, "segment-created %d %d\n", e.Base, e.Created)
	}
	return b
}

// parseCheckpoint decodes a version 2 file written by encode, or a version 1
// file, strictly: every value is a decimal integer of zero or more (-1 is
// allowed for version 1's "none"), and segment-created bases strictly
// ascend. It allocates no more than a small multiple of len(b).
func parseCheckpoint(b []byte) (checkpoint, error) {
	text, ok := strings.CutSuffix(string(b), "\n")
	header, body, _ := strings.Cut(text, "\n")
	if !ok || (header != checkpointHeader && header != checkpointHeaderV1) {
		return checkpoint{}, errors.New("not a log checkpoint")
	}
	v1 := header == checkpointHeaderV1
	var c checkpoint
	var v [2]int64
	n := 1 // line number
	for line := range strings.SplitSeq(body, "\n") {
		n++
		var err error
		switch {
		case n == 2:
			err = parseCheckpointLine(line, "start-offset", v[:1], 0)
			c.StartOffset = v[0]
		case n == 3:
			err = parseCheckpointLine(line, "recovery-point", v[:1], 0)
			c.RecoveryPoint = v[0]
		case v1 && n == 4:
			err = parseCheckpointLine(line, "active-segment", v[:2], -1)
			if err == nil && v[0] >= 0 && v[1] >= 0 {
				c.Created = []segmentCreated{{Base: v[0], Created: v[1]}}
			}
		case v1:
			err = errors.New("unexpected line")
		default:
			err = parseCheckpointLine(line, "segment-created", v[:2], 0)
			if err == nil && len(c.Created) > 0 && v[0] <= c.Created[len(c.Created)-1].Base {
				err = fmt.Errorf("segment base %d not above %d", v[0], c.Created[len(c.Created)-1].Base)
			}
			c.Created = append(c.Created, segmentCreated{Base: v[0], Created: v[1]})
		}
		if err != nil {
			return checkpoint{}, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if n < 3 || (v1 && n < 4) {
		return checkpoint{}, errors.New("log checkpoint ends early")
	}
	return c, nil
}

// parseCheckpointLine parses "name v..." into dst, one value per element,
// rejecting values below lowest.
func parseCheckpointLine(line, name string, dst []int64, lowest int64) error {
	if strings.Count(line, " ") != len(dst) { // before splitting a long line
		return fmt.Errorf("want %q with %d values", name, len(dst))
	}
	words := strings.Split(line, " ")
	if words[0] != name {
		return fmt.Errorf("want %q with %d values", name, len(dst))
	}
	for i := range dst {
		v, err := strconv.ParseInt(words[i+1], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if v < lowest {
			return fmt.Errorf("%s: %d is below %d", name, v, lowest)
		}
		dst[i] = v
	}
	return nil
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
	return WriteFileAtomic(dir, checkpointName, c.encode())
}

// WriteFileAtomic writes data to dir/name through a synced temporary file
// and a rename, then syncs the directory: a crash leaves the old file or
// the new one, whole.
func WriteFileAtomic(dir, name string, data []byte) error {
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
//
// A failed fsync is marked ErrSyncFailed; failing to open the directory
// (out of descriptors, say) is not, and can be tried again.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("sync dir %s: %w: %w", dir, ErrSyncFailed, err)
	}
	return nil
}

// WriteInstallCheckpoint writes the checkpoint of a log directory whose
// segment files were copied in from elsewhere (a raft snapshot install): the
// log start offset, each segment's created time, and a recovery point of 0,
// so that Open scans and validates every segment (CRCs included) and
// rebuilds the indexes that were not copied.
func WriteInstallCheckpoint(dir string, startOffset int64, segs []SegmentInfo) error {
	c := checkpoint{StartOffset: startOffset}
	for _, s := range segs {
		if s.Created >= 0 && s.Size > 0 && (len(c.Created) == 0 || s.BaseOffset > c.Created[len(c.Created)-1].Base) {
			c.Created = append(c.Created, segmentCreated{Base: s.BaseOffset, Created: s.Created})
		}
	}
	return writeCheckpoint(dir, c)
}

// SegmentFileName is the name of the .log file of the segment at base.
func SegmentFileName(base int64) string { return filepath.Base(segmentPath("", base, logSuffix)) }
