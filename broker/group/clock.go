package group

import "time"

// Clock tells the coordinator the time. Tests substitute a clock they
// advance by hand.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
