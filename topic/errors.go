package topic

import (
	"errors"
	"strconv"
)

// Sentinel errors. Errors about topic names, partition counts and configs
// wrap one of them, so callers can map them to Kafka error codes with
// errors.Is:
// ErrInvalidName to INVALID_TOPIC_EXCEPTION, ErrInvalidPartitions to
// INVALID_PARTITIONS, ErrInvalidConfig and ErrUnknownConfig to
// INVALID_CONFIG.
var (
	// ErrInvalidName reports a topic name that breaks Kafka's naming rules.
	ErrInvalidName = errors.New("invalid topic name")
	// ErrInvalidPartitions reports a partition count below 1.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidConfig reports a known config key with a value of the wrong
	// type or outside its valid range, or configs that conflict.
	ErrInvalidConfig = errors.New("invalid topic config")
	// ErrUnknownConfig reports a config key that is not a topic config.
	ErrUnknownConfig = errors.New("unknown topic config")
)

// maxQuoted bounds how much of a client-supplied string an error message
// repeats, so a huge bad value cannot make a huge error.
const maxQuoted = 64

// quote returns s quoted for an error message, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuoted]) + "..."
}
