//go:build unix

package log

import (
	"math"
	"syscall"
)

// softFileLimit is the process's soft limit on open files, or 4096 if it
// cannot be read.
func softFileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 4096
	}
	return int(min(lim.Cur, math.MaxInt32))
}
