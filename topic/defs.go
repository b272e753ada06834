package topic

import (
	"math"
	"strconv"
	"strings"
)

// Def describes one topic config.
type Def struct {
	Name    string
	Type    Type
	Default string // Kafka's default, as DescribeConfigs shows it
	Doc     string
	// Validate checks a value's type, then its range or allowed values. It
	// returns an error that names the rule broken (not the key).
	Validate func(v string) error
	// ReadOnly marks a config that can be described but not set. None of
	// Kafka's topic configs is read-only, so no entry of the table sets it;
	// DescribeConfigs reports it as is.
	ReadOnly bool
	// BrokerKey is the broker config that supplies the default for every
	// topic without an override (Kafka's "Server Default Property").
	BrokerKey string
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// defs is the config table, sorted by name (a test checks the order).
// Types, defaults, ranges and broker keys are Kafka 3.9's.
var defs = []Def{
	{Name: CleanupPolicy, Type: List, Default: CleanupPolicyDelete, BrokerKey: "log.cleanup.policy",
		Validate: listOf(CleanupPolicyCompact, CleanupPolicyDelete),
		Doc:      `What happens to old segments: "delete" removes them once past retention.ms or retention.bytes; "compact" keeps the latest record of each key; "compact,delete" compacts and also applies retention.`},
	{Name: CompressionGzipLevel, Type: Int, Default: "-1", BrokerKey: "compression.gzip.level",
		Validate: gzipLevel,
		Doc:      "The gzip level used when compression.type is gzip; -1 means the codec's default."},
	{Name: CompressionLz4Level, Type: Int, Default: "9", BrokerKey: "compression.lz4.level",
		Validate: between(Int, 1, 17),
		Doc:      "The lz4 level used when compression.type is lz4."},
	{Name: CompressionType, Type: String, Default: CompressionProducer, BrokerKey: "compression.type",
		Validate: oneOf(CompressionUncompressed, CompressionZstd, CompressionLz4, CompressionSnappy, CompressionGzip, CompressionProducer),
		Doc:      `The codec batches are stored with. "producer" keeps the codec each producer chose; "uncompressed" stores them without compression.`},
	{Name: CompressionZstdLevel, Type: Int, Default: "3", BrokerKey: "compression.zstd.level",
		Validate: between(Int, -131072, 22),
		Doc:      "The zstd level used when compression.type is zstd."},
	{Name: DeleteRetentionMs, Type: Long, Default: "86400000", BrokerKey: "log.cleaner.delete.retention.ms",
		Validate: atLeast(Long, 0),
		Doc:      "How long a compacted topic keeps tombstones (records with a null value). A consumer reading from the start must finish within this time to see every delete."},
	{Name: FileDeleteDelayMs, Type: Long, Default: "60000", BrokerKey: "log.segment.delete.delay.ms",
		Validate: atLeast(Long, 0),
		Doc:      "How long a segment removed from the log waits before its files are deleted from disk."},
	{Name: FlushMessages, Type: Long, Default: maxLong, BrokerKey: "log.flush.interval.messages",
		Validate: atLeast(Long, 1),
		Doc:      "Force an fsync of the log after this many messages. The default leaves durability to replication."},
	{Name: FlushMs, Type: Long, Default: maxLong, BrokerKey: "log.flush.interval.ms",
		Validate: atLeast(Long, 0),
		Doc:      "Force an fsync of the log when this many milliseconds have passed since the last one. The default leaves durability to replication."},
	{Name: IndexIntervalBytes, Type: Int, Default: "4096", BrokerKey: "log.index.interval.bytes",
		Validate: atLeast(Int, 0),
		Doc:      "Bytes of log between two entries of the offset index. Smaller means a larger index and shorter scans."},
	{Name: MaxCompactionLagMs, Type: Long, Default: maxLong, BrokerKey: "log.cleaner.max.compaction.lag.ms",
		Validate: atLeast(Long, 1),
		Doc:      "Longest time a record may stay uncompacted in a compacted topic."},
	{Name: MaxMessageBytes, Type: Int, Default: "1048588", BrokerKey: "message.max.bytes",
		Validate: atLeast(Int, 0),
		Doc:      "Largest record batch the topic accepts, in bytes, after compression."},
	{Name: MessageDownconversionEnable, Type: Boolean, Default: "true", BrokerKey: "log.message.downconversion.enable",
		Validate: boolean,
		Doc:      "Whether a fetch from a client that needs an older message format may be served by converting batches down. If false, such fetches fail with UNSUPPORTED_VERSION."},
	{Name: MessageTimestampAfterMaxMs, Type: Long, Default: maxLong, BrokerKey: "log.message.timestamp.after.max.ms",
		Validate: atLeast(Long, 0),
		Doc:      "With CreateTime timestamps, reject a batch whose timestamp is more than this many milliseconds ahead of the broker's clock."},
	{Name: MessageTimestampBeforeMaxMs, Type: Long, Default: maxLong, BrokerKey: "log.message.timestamp.before.max.ms",
		Validate: atLeast(Long, 0),
		Doc:      "With CreateTime timestamps, reject a batch whose timestamp is more than this many milliseconds behind the broker's clock."},
	{Name: MessageTimestampDifferenceMaxMs, Type: Long, Default: maxLong, BrokerKey: "log.message.timestamp.difference.max.ms",
		Validate: atLeast(Long, 0),
		Doc:      "Deprecated: use message.timestamp.before.max.ms and message.timestamp.after.max.ms. Either of those left at its default takes this value."},
	{Name: MessageTimestampType, Type: String, Default: TimestampCreateTime, BrokerKey: "log.message.timestamp.type",
		Validate: oneOf(TimestampCreateTime, TimestampLogAppendTime),
		Doc:      "Which timestamp records carry: CreateTime keeps the producer's; LogAppendTime replaces it with the broker's time of append."},
	{Name: MinCleanableDirtyRatio, Type: Double, Default: "0.5", BrokerKey: "log.cleaner.min.cleanable.ratio",
		Validate: fraction(0, 1),
		Doc:      "Compaction starts when the uncompacted share of the log reaches this ratio (subject to the compaction lags). Higher means rarer, cheaper cleaning and more duplicates on disk."},
	{Name: MinCompactionLagMs, Type: Long, Default: "0", BrokerKey: "log.cleaner.min.compaction.lag.ms",
		Validate: atLeast(Long, 0),
		Doc:      "Shortest time a record stays uncompacted in a compacted topic."},
	{Name: MinInsyncReplicas, Type: Int, Default: "1", BrokerKey: "min.insync.replicas",
		Validate: atLeast(Int, 1),
		Doc:      "With acks=all, the number of replicas that must have a write before it succeeds."},
	{Name: Preallocate, Type: Boolean, Default: "false", BrokerKey: "log.preallocate",
		Validate: boolean,
		Doc:      "Whether a new segment file is preallocated on disk at its full size."},
	{Name: RetentionBytes, Type: Long, Default: "-1", BrokerKey: "log.retention.bytes",
		Validate: anyLong,
		Doc:      "With the delete policy, the size a partition may grow to before its oldest segments are removed. Negative means no size limit. It applies per partition."},
	{Name: RetentionMs, Type: Long, Default: "604800000", BrokerKey: "log.retention.ms",
		Validate: atLeast(Long, -1),
		Doc:      "With the delete policy, how long a segment is kept before it is removed; -1 means no time limit."},
	{Name: SegmentBytes, Type: Int, Default: "1073741824", BrokerKey: "log.segment.bytes",
		Validate: atLeast(Int, 14),
		Doc:      "Size at which a segment is closed and a new one started. Retention and compaction work a whole segment at a time."},
	{Name: SegmentIndexBytes, Type: Int, Default: "10485760", BrokerKey: "log.index.size.max.bytes",
		Validate: atLeast(Int, 4),
		Doc:      "Size of a segment's offset index file, which is preallocated and trimmed when the segment is closed."},
	{Name: SegmentJitterMs, Type: Long, Default: "0", BrokerKey: "log.roll.jitter.ms",
		Validate: atLeast(Long, 0),
		Doc:      "Up to this many milliseconds, chosen at random, are taken off segment.ms so that partitions do not all roll at once."},
	{Name: SegmentMs, Type: Long, Default: "604800000", BrokerKey: "log.roll.ms",
		Validate: atLeast(Long, 1),
		Doc:      "Age at which a segment is closed even if it is not full, so retention and compaction can reach its records."},
	{Name: UncleanLeaderElectionEnable, Type: Boolean, Default: "false", BrokerKey: "unclean.leader.election.enable",
		Validate: boolean,
		Doc:      "Whether a replica outside the in-sync set may become leader as a last resort, at the risk of losing data."},
}

var (
	byName      = make(map[string]*Def, len(defs))
	byBrokerKey = make(map[string]*Def, len(defs))
)

func init() {
	for i := range defs {
		byName[defs[i].Name] = &defs[i]
		byBrokerKey[defs[i].BrokerKey] = &defs[i]
	}
}

// Lookup returns the definition of the topic config called name.
func Lookup(name string) (Def, bool) {
	d, ok := byName[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// LookupBrokerKey returns the definition of the topic config whose default
// comes from the broker config brokerKey (e.g. "log.retention.ms").
func LookupBrokerKey(brokerKey string) (Def, bool) {
	d, ok := byBrokerKey[brokerKey]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// Defs returns every topic config definition, sorted by name.
func Defs() []Def {
	return append([]Def(nil), defs...)
}

// Names returns every topic config name, sorted.
func Names() []string {
	names := make([]string, len(defs))
	for i := range defs {
		names[i] = defs[i].Name
	}
	return names
}

// normalize returns a value as it is stored and reported: trimmed, as Kafka
// trims before parsing.
func normalize(v string) string {
	return strings.TrimSpace(v)
}
