package raftstore

import "github.com/hashicorp/raft-wal"

// raft-wal allocates each segment file whole (64 MiB by default), so on a
// small disk its first segment alone can fail start-up. Unless set, the
// segment size is a 32nd of the filesystem holding the data, between
// 1 MiB and raft-wal's default. An entry larger than a segment still fits:
// raft-wal seals a segment after the write that fills it.
const (
	minWALSegment = 1 << 20
	walDiskShare  = 32
)

// walSegmentSize is the segment size to use: configured if positive, else
// sized from the filesystem holding dir.
func walSegmentSize(configured int, dir string) int {
	if configured > 0 {
		return configured
	}
	total, ok := filesystemBytes(dir)
	return walSegmentFor(total, ok)
}

// walSegmentFor sizes segments for a filesystem of total bytes (ok false:
// unknown).
func walSegmentFor(total uint64, ok bool) int {
	if !ok {
		return wal.DefaultSegmentSize
	}
	return int(min(max(total/walDiskShare, minWALSegment), uint64(wal.DefaultSegmentSize)))
}
