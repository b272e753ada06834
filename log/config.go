package log

import "math"

// Config holds the per-partition settings the log obeys, with Kafka's names.
type Config struct {
	SegmentBytes       int64 // segment.bytes (Kafka default 1073741824)
	SegmentMs          int64 // segment.ms (default 604800000)
	RetentionMs        int64 // retention.ms, -1 = unlimited (default 604800000)
	RetentionBytes     int64 // retention.bytes, -1 = unlimited (default -1)
	IndexIntervalBytes int32 // index.interval.bytes (default 4096)
	SegmentIndexBytes  int32 // segment.index.bytes (default 10485760); roll when the index is full
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 60 * 60 * 1000,
		RetentionMs:        7 * 24 * 60 * 60 * 1000,
		RetentionBytes:     -1,
		IndexIntervalBytes: 4096,
		SegmentIndexBytes:  10 << 20,
	}
}

// normalized clamps c to values the on-disk format can hold: positions in
// an index entry are uint32, so a segment holds at most MaxInt32 bytes, and
// an index holds at least one entry. Zero or negative sizes mean the default.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	return c
}

// maxOffsetEntries and maxTimeEntries are the entry capacities of a
// segment's indexes; a segment rolls when either is reached.
func (c Config) maxOffsetEntries() int64 { return max(1, int64(c.SegmentIndexBytes)/offsetEntrySize) }
func (c Config) maxTimeEntries() int64   { return max(1, int64(c.SegmentIndexBytes)/timeEntrySize) }
