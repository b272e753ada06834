package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// listSegments returns the base offsets of the segments in the directory,
// ascending, after deleting temporary files and orphan index files.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			l.logger.Info("removing leftover temporary file", "file", name)
			if err := os.Remove(l.path(name)); err != nil {
				return nil, fmt.Errorf("remove temporary file: %w", err)
			}
			continue
		}
		base, suffix, ok := parseSegmentName(name)
		switch {
		case !ok:
		case suffix == logSuffix:
			logs[base] = true
		default:
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		if base, _, _ := parseSegmentName(name); !logs[base] {
			l.logger.Info("removing index without a segment", "file", name)
			if err := os.Remove(l.path(name)); err != nil {
				return nil, fmt.Errorf("remove orphan index: %w", err)
			}
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }

// parseSegmentName splits "00000000000000000042.index" into 42 and ".index".
func parseSegmentName(name string) (base int64, suffix string, ok bool) {
	if len(name) < 21 {
		return 0, "", false
	}
	suffix = name[20:]
	if suffix != logSuffix && suffix != indexSuffix && suffix != timeIndexSuffix {
		return 0, "", false
	}
	for _, c := range name[:20] {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return base, suffix, true
}

// removeSegmentFiles deletes the files of segments that were never opened.
func removeSegmentFiles(dir string, bases []int64) error {
	for _, b := range bases {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if err := os.Remove(segmentPath(dir, b, suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove segment: %w", err)
			}
		}
	}
	return nil
}
