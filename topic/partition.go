package topic

import (
	"fmt"
	"strconv"
	"strings"
)

// PartitionDir returns the name of a partition's log directory,
// "<topic>-<partition>", as Kafka names it.
func PartitionDir(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// ParsePartitionDir splits a directory name made by PartitionDir back into
// the topic and partition. It accepts only what PartitionDir produces for a
// valid topic name and a non-negative partition.
func ParsePartitionDir(dir string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(dir, '-')
	if i < 0 {
		return "", 0, fmt.Errorf("partition directory %s: no '-' before the partition number", quote(dir))
	}
	topic, num := dir[:i], dir[i+1:]
	p, perr := strconv.ParseInt(num, 10, 32)
	if perr != nil || p < 0 || strconv.FormatInt(p, 10) != num {
		return "", 0, fmt.Errorf("partition directory %s: %s is not a partition number", quote(dir), quote(num))
	}
	if err := ValidateName(topic); err != nil {
		return "", 0, fmt.Errorf("partition directory %s: %w", quote(dir), err)
	}
	return topic, int32(p), nil
}
