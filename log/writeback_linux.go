package log

import (
	"os"

	"golang.org/x/sys/unix"
)

// writebacks carries ranges to start writing back to the one goroutine
// that does it, so that a congested disk never blocks an append: when it
// is busy, a hint is dropped (the next checkpoint's fsync writes the range
// anyway).
var writebacks = make(chan writeback, 64)

type writeback struct {
	f      *os.File
	off, n int64
}

func init() { go writebackLoop() }

func writebackLoop() {
	for w := range writebacks {
		rc, err := w.f.SyscallConn()
		if err != nil {
			continue
		}
		// A file closed meanwhile (a segment removed) makes Control fail:
		// nothing is written back, as nothing needs to be.
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SyncFileRange(int(fd), w.off, w.n, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
}

// startWriteback asks the kernel, from another goroutine, to start
// writing f's bytes [off, off+n) to disk, so that the fsync at the next
// checkpoint finds less to do. It is a hint: it promises nothing and never
// waits, and its error is ignored (a failing disk fails that fsync).
func startWriteback(f *os.File, off, n int64) {
	select {
	case writebacks <- writeback{f, off, n}:
	default:
	}
}
