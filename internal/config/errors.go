package config

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped by *Error.
var (
	ErrUnknownKey = errors.New("unknown config key")
	ErrBadValue   = errors.New("invalid config value")
)

// Error is a configuration error: it names where the key came from, the key
// and the value.
type Error struct {
	// Origin is where the key was given: "brokerd.properties:12",
	// "BROKERD_LOG_DIRS", "--data-dir".
	Origin string
	Key    string
	Value  string
	Err    error
}

func (e *Error) Error() string {
	if errors.Is(e.Err, ErrUnknownKey) {
		msg := fmt.Sprintf("%s: unknown config key %q", e.Origin, e.Key)
		if s := suggest(e.Key); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return msg
	}
	v := fmt.Sprintf("%q", e.Value)
	if k, ok := Lookup(e.Key); ok && k.Secret {
		v = "(hidden)"
	}
	return fmt.Sprintf("%s: %s=%s: %v", e.Origin, e.Key, v, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func unknownKey(origin, key, value string) *Error {
	return &Error{Origin: origin, Key: key, Value: value, Err: ErrUnknownKey}
}

func badValue(origin, key, value string, err error) *Error {
	return &Error{Origin: origin, Key: key, Value: value, Err: fmt.Errorf("%w: %w", ErrBadValue, err)}
}

// suggest returns the known key (or alias) closest to an unknown one, if it
// is within a small edit distance.
func suggest(key string) string {
	best, bestD := "", 3
	try := func(name string) {
		if d := editDistance(key, name); d < bestD {
			best, bestD = name, d
		}
	}
	for _, k := range keyList {
		try(k.Name)
	}
	for a := range aliases {
		try(a)
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
