package topic

import (
	"math"
	"slices"
)

// Effective settings that Kafka derives from more than one config.

// Compact reports whether cleanup.policy includes "compact".
func (r Resolved) Compact() bool {
	return slices.Contains(r.List(CleanupPolicy), CleanupPolicyCompact)
}

// Delete reports whether cleanup.policy includes "delete".
func (r Resolved) Delete() bool {
	return slices.Contains(r.List(CleanupPolicy), CleanupPolicyDelete)
}

// LogAppendTime reports whether message.timestamp.type is LogAppendTime.
func (r Resolved) LogAppendTime() bool {
	return r.String(MessageTimestampType) == TimestampLogAppendTime
}

// TimestampBeforeMaxMs returns how far behind the broker's clock a
// CreateTime timestamp may be. Like Kafka 3.9, it takes the deprecated
// message.timestamp.difference.max.ms while message.timestamp.before.max.ms
// is at its default (math.MaxInt64).
func (r Resolved) TimestampBeforeMaxMs() int64 {
	return r.timestampBound(MessageTimestampBeforeMaxMs)
}

// TimestampAfterMaxMs returns how far ahead of the broker's clock a
// CreateTime timestamp may be, with the same fallback as
// TimestampBeforeMaxMs.
func (r Resolved) TimestampAfterMaxMs() int64 {
	return r.timestampBound(MessageTimestampAfterMaxMs)
}

func (r Resolved) timestampBound(name string) int64 {
	if v := r.Int64(name); v != math.MaxInt64 {
		return v
	}
	return r.Int64(MessageTimestampDifferenceMaxMs)
}
