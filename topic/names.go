package topic

// Topic config names, as Kafka spells them.
const (
	CleanupPolicy                   = "cleanup.policy"
	CompressionGzipLevel            = "compression.gzip.level"
	CompressionLz4Level             = "compression.lz4.level"
	CompressionType                 = "compression.type"
	CompressionZstdLevel            = "compression.zstd.level"
	DeleteRetentionMs               = "delete.retention.ms"
	FileDeleteDelayMs               = "file.delete.delay.ms"
	FlushMessages                   = "flush.messages"
	FlushMs                         = "flush.ms"
	IndexIntervalBytes              = "index.interval.bytes"
	MaxCompactionLagMs              = "max.compaction.lag.ms"
	MaxMessageBytes                 = "max.message.bytes"
	MessageDownconversionEnable     = "message.downconversion.enable"
	MessageTimestampAfterMaxMs      = "message.timestamp.after.max.ms"
	MessageTimestampBeforeMaxMs     = "message.timestamp.before.max.ms"
	MessageTimestampDifferenceMaxMs = "message.timestamp.difference.max.ms"
	MessageTimestampType            = "message.timestamp.type"
	MinCleanableDirtyRatio          = "min.cleanable.dirty.ratio"
	MinCompactionLagMs              = "min.compaction.lag.ms"
	MinInsyncReplicas               = "min.insync.replicas"
	Preallocate                     = "preallocate"
	RetentionBytes                  = "retention.bytes"
	RetentionMs                     = "retention.ms"
	SegmentBytes                    = "segment.bytes"
	SegmentIndexBytes               = "segment.index.bytes"
	SegmentJitterMs                 = "segment.jitter.ms"
	SegmentMs                       = "segment.ms"
	UncleanLeaderElectionEnable     = "unclean.leader.election.enable"
)

// Values of cleanup.policy (a list of one or both).
const (
	CleanupPolicyCompact = "compact"
	CleanupPolicyDelete  = "delete"
)

// Values of compression.type.
const (
	CompressionUncompressed = "uncompressed"
	CompressionZstd         = "zstd"
	CompressionLz4          = "lz4"
	CompressionSnappy       = "snappy"
	CompressionGzip         = "gzip"
	CompressionProducer     = "producer" // keep whatever codec the producer used
)

// Values of message.timestamp.type.
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)
