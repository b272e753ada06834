package quota

import (
	"fmt"
	"math"
)

// Key is a quota key.
type Key uint8

// The quota keys brokerd enforces, Kafka's user and client-id quotas.
const (
	ProducerByteRate Key = iota
	ConsumerByteRate
	RequestPercentage
	NumKeys
)

// Names of the keys, as Kafka's configs name them.
var keyNames = [NumKeys]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage"}

func (k Key) String() string {
	if k < NumKeys {
		return keyNames[k]
	}
	return fmt.Sprintf("quota-key(%d)", uint8(k))
}

// ControllerMutationRate is Kafka's KIP-599 quota on topic and partition
// creations and deletions. brokerd does not enforce it, so it refuses to
// set it rather than store a limit that does nothing.
const ControllerMutationRate = "controller_mutation_rate"

// ParseKey returns the key of a name.
func ParseKey(name string) (Key, bool) {
	for k, n := range keyNames {
		if n == name {
			return Key(k), true
		}
	}
	return 0, false
}

// maxIntegral is the largest byte rate taken: Kafka's LONG bound, as a
// float64 that converts back without overflow.
const maxIntegral = float64(1 << 62)

// CheckValue validates a value for a key as Kafka's controller does:
// greater than 0, and the byte rates integral (Kafka's LONG configs). NaN
// and infinities are refused too.
func CheckValue(k Key, v float64) error {
	switch {
	case k >= NumKeys:
		return fmt.Errorf("%w: invalid configuration key %s", ErrInvalid, k)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%w: quota %s must be a finite number", ErrInvalid, k)
	case v <= 0:
		return fmt.Errorf("%w: quota %s must be greater than 0", ErrInvalid, k)
	case k == RequestPercentage:
		return nil
	case v > maxIntegral:
		return fmt.Errorf("%w: proposed value for %s is too large for a LONG", ErrInvalid, k)
	case math.Abs(math.Mod(v, 1)) > 1e-6:
		return fmt.Errorf("%w: %s cannot be a fractional value", ErrInvalid, k)
	}
	return nil
}

// Values are an entity's quotas by key; 0 is unset (a set quota is > 0).
type Values [NumKeys]float64

// Empty reports whether no key is set.
func (v Values) Empty() bool { return v == Values{} }

// Validate checks every set value.
func (v Values) Validate() error {
	for k, x := range v {
		if x != 0 {
			if err := CheckValue(Key(k), x); err != nil {
				return err
			}
		}
	}
	return nil
}

// Op is one change to one key: set Value, or Remove it.
type Op struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

// Alteration is the changes to one entity.
type Alteration struct {
	Entity Entity `json:"entity"`
	Ops    []Op   `json:"ops"`
}

// Apply validates a's operations and returns the entity's values after
// them: Kafka's errors for an unknown key, a key twice, or a bad value.
// Removing a key that is not set, or an unknown key, is not an error.
func (a *Alteration) Apply(cur Values) (Values, error) {
	if err := a.Entity.Validate(); err != nil {
		return cur, err
	}
	if len(a.Ops) > int(NumKeys)*4 {
		return cur, fmt.Errorf("%w: %d quota operations on one entity", ErrInvalid, len(a.Ops))
	}
	var seen [NumKeys]bool
	next := cur
	for _, op := range a.Ops {
		k, ok := ParseKey(op.Key)
		switch {
		case !ok && op.Remove:
			// Kafka removes only a key the entity has: removing any
			// other, unknown or not, changes nothing.
			continue
		case op.Key == ControllerMutationRate:
			return cur, fmt.Errorf("%w: %s is not enforced by brokerd (topic and partition changes are not rate-limited), so it is not stored", ErrInvalid, ControllerMutationRate)
		case !ok:
			return cur, fmt.Errorf("%w: invalid configuration key %.64q", ErrInvalid, op.Key)
		}
		if seen[k] {
			return cur, fmt.Errorf("%w: duplicate quota key %s not updating quota for this entity %s", ErrInvalid, k, a.Entity)
		}
		seen[k] = true
		if op.Remove {
			next[k] = 0
			continue
		}
		if err := CheckValue(k, op.Value); err != nil {
			return cur, err
		}
		next[k] = op.Value
	}
	return next, nil
}
