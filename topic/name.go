package topic

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest topic name Kafka accepts. A partition directory
// is "<topic>-<partition>" and may carry a suffix during deletion, so the
// name stays well under the usual 255-byte file name limit.
const MaxNameLen = 249

// Names of Kafka's internal topics. Clients may not create them; brokerd
// keeps group offsets and transaction state in its own state machine.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

// ValidateName checks a topic name against Kafka's rules: not empty, at most
// MaxNameLen characters, not "." or "..", and only ASCII letters, digits,
// '.', '_' and '-'. The error wraps ErrInvalidName.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case name == "." || name == "..":
		return fmt.Errorf("%w %q: the name cannot be \".\" or \"..\"", ErrInvalidName, name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: the name is %d bytes long, the limit is %d", ErrInvalidName, len(name), MaxNameLen)
	}
	for i, r := range name {
		if !legalNameRune(r) {
			return fmt.Errorf("%w %s: character %q at byte %d is not allowed (use ASCII letters, digits, '.', '_' and '-')",
				ErrInvalidName, quote(name), r, i)
		}
	}
	return nil
}

func legalNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '-'
}

// IsInternal reports whether name is one of Kafka's internal topics.
func IsInternal(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic
}

// InternalPartitions is how many partitions Kafka's internal topics show:
// Kafka's offsets.topic.num.partitions and
// transaction.state.log.num.partitions default.
const InternalPartitions = 50

// IsInternalPartition reports whether p is a partition of the internal
// topic name.
func IsInternalPartition(name string, p int32) bool {
	return IsInternal(name) && p >= 0 && p < InternalPartitions
}

// HasCollisionChars reports whether name contains '.' or '_'. Kafka warns on
// creating such a topic: metric names replace '.' with '_', so the topic may
// collide with another one there.
func HasCollisionChars(name string) bool {
	return strings.ContainsAny(name, "._")
}

// CollisionKey maps name to the form it takes in metric names ('.' becomes
// '_'). Two distinct topics with the same key collide; a store can index
// topics by this key to find a collision without a scan.
func CollisionKey(name string) string {
	return strings.ReplaceAll(name, ".", "_")
}

// CollidesWith reports whether a and b are different names that become the
// same metric name once '.' is mapped to '_'. Kafka refuses to create a topic
// that collides with an existing one.
func CollidesWith(a, b string) bool {
	return a != b && CollisionKey(a) == CollisionKey(b)
}
