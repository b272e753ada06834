package topic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The constructors below build the Validate funcs of the config table. Each
// checks the type first, then the range or the allowed values.

// bitsOf returns the integer width of t: 32 for Int, 64 for Long.
func bitsOf(t Type) int {
	if t == Int {
		return 32
	}
	return 64
}

// atLeast accepts an integer of type t (Int or Long) no smaller than lo.
func atLeast(t Type, lo int64) func(string) error {
	return func(v string) error {
		n, err := parseInt(v, bitsOf(t))
		if err != nil {
			return err
		}
		if n < lo {
			return fmt.Errorf("must be at least %d", lo)
		}
		return nil
	}
}

// between accepts an integer of type t (Int or Long) in [lo, hi].
func between(t Type, lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := parseInt(v, bitsOf(t))
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

// anyLong accepts any 64-bit integer.
func anyLong(v string) error {
	_, err := parseInt(v, 64)
	return err
}

// gzipLevel accepts Kafka's gzip levels: -1 (the codec's default) or 1 to 9.
func gzipLevel(v string) error {
	n, err := parseInt(v, 32)
	if err != nil {
		return err
	}
	if n != -1 && (n < 1 || n > 9) {
		return errors.New("must be -1 or between 1 and 9")
	}
	return nil
}

// boolean accepts "true" or "false" in any case.
func boolean(v string) error {
	_, err := parseBool(v)
	return err
}

// fraction accepts a finite double in [lo, hi].
func fraction(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := parseDouble(v)
		if err != nil {
			return err
		}
		if math.IsInf(f, 0) || f < lo || f > hi {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

// oneOf accepts exactly one of the given strings (case-sensitive, as in
// Kafka).
func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, strings.TrimSpace(v)) {
			return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
		}
		return nil
	}
}

// listOf accepts a non-empty comma-separated list whose elements are all
// among the given strings.
func listOf(allowed ...string) func(string) error {
	return func(v string) error {
		items := parseList(v)
		if len(items) == 0 {
			return fmt.Errorf("must list at least one of %s", strings.Join(allowed, ", "))
		}
		for _, it := range items {
			if !slices.Contains(allowed, it) {
				return fmt.Errorf("element %s must be one of %s", quote(it), strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}
