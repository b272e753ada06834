package topic

import (
	"fmt"
	"maps"
	"slices"
)

// ValidateConfigs checks topic config overrides as a client sends them to
// CreateTopics or AlterConfigs. Keys are checked in sorted order and the
// first problem is returned, so the result does not depend on map order:
// an unknown key wraps ErrUnknownConfig and names the key; a bad value or a
// conflict wraps ErrInvalidConfig and names the key and value. Values are
// checked against each other with Kafka's defaults standing in for the keys
// not given; use Validate to check them against broker defaults instead.
func ValidateConfigs(cfgs map[string]string) error {
	return Validate(cfgs, nil)
}

// Validate checks overrides one by one as ValidateConfigs does, then checks
// the topic's effective configs (overrides over d over Kafka's defaults) for
// conflicts between keys, as Kafka does on topic creation.
func Validate(overrides map[string]string, d Defaults) error {
	for _, k := range slices.Sorted(maps.Keys(overrides)) {
		if err := validateOne(k, overrides[k]); err != nil {
			return err
		}
	}
	return Resolve(overrides, d).conflicts()
}

// validateOne checks a single key and value.
func validateOne(key, value string) error {
	def, ok := byName[key]
	if !ok {
		return fmt.Errorf("%w %s", ErrUnknownConfig, quote(key))
	}
	if err := def.Validate(value); err != nil {
		return fmt.Errorf("%w: %s=%s: %w", ErrInvalidConfig, key, quote(value), err)
	}
	return nil
}

// conflicts reports effective values that are each valid but contradict one
// another.
func (r Resolved) conflicts() error {
	minLag, maxLag := r.Int64(MinCompactionLagMs), r.Int64(MaxCompactionLagMs)
	if minLag > maxLag {
		return fmt.Errorf("%w: %s=%d is greater than %s=%d",
			ErrInvalidConfig, MinCompactionLagMs, minLag, MaxCompactionLagMs, maxLag)
	}
	return nil
}
