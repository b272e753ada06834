//go:build race

package wire

// raceEnabled: the race detector changes what allocations measure.
const raceEnabled = true
