package log

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing back the
// range's dirty pages, without waiting for them.
const syncFileRangeWrite = 2

// startWriteback asks the kernel to start writing f's bytes [off,
// off+n) to disk, so that the fsync at the next checkpoint finds less to
// do. It is a hint: it promises nothing, and its error is ignored (a
// failing disk fails that fsync).
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
	})
}
