package topic

import (
	"fmt"
	"maps"
)

// Topic is a topic as the state machine stores it.
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`         // Kafka topic ID (a UUID), never zero
	Partitions int32             `json:"partitions"` // at least 1
	Configs    map[string]string `json:"configs"`    // only explicit overrides
}

// Validate checks the name, the ID, the partition count and the config
// overrides.
func (t Topic) Validate() error {
	if err := ValidateName(t.Name); err != nil {
		return err
	}
	if t.ID == ([16]byte{}) {
		return fmt.Errorf("topic %s: the topic ID is zero", t.Name)
	}
	if t.Partitions < 1 {
		return fmt.Errorf("topic %s: %w: %d is below 1", t.Name, ErrInvalidPartitions, t.Partitions)
	}
	if err := ValidateConfigs(t.Configs); err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	return nil
}

// Clone returns a deep copy of t, so a caller can change it without
// touching the stored one.
func (t Topic) Clone() Topic {
	t.Configs = maps.Clone(t.Configs)
	return t
}

// Resolve returns the topic's effective configs over the broker defaults d.
func (t Topic) Resolve(d Defaults) Resolved {
	return Resolve(t.Configs, d)
}
