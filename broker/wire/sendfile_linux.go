package wire

import (
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

const canSendFile = true

// maxSendfileChunk is the most one sendfile call is asked for (Linux sends
// at most 0x7ffff000 bytes a call).
const maxSendfileChunk = 1 << 30

// sendFile writes f's records to the connection with sendfile, waiting
// for the socket under its write deadline. The offset is explicit, so the
// file's own position is neither used nor moved.
func sendFile(rc syscall.RawConn, f *FileRecords) error {
	fc, err := f.File.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile from %s: %w", f.File.Name(), err)
	}
	off, left := f.Off, f.Len
	var serr error
	cerr := fc.Control(func(in uintptr) {
		werr := rc.Write(func(out uintptr) bool {
			for left > 0 {
				n, err := unix.Sendfile(int(out), int(in), &off, min(left, maxSendfileChunk))
				if n > 0 {
					left -= n
				}
				switch {
				case (err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP) && left == f.Len:
					// This file or socket cannot take sendfile, and
					// nothing went out yet: the caller writes instead.
					serr = errNoSendfile
					return true
				case err == unix.EAGAIN:
					return false // wait until the socket takes more
				case err == unix.EINTR:
				case err != nil:
					serr = err
					return true
				case n == 0:
					// The file ends before the range: the frame promised
					// bytes it cannot have, so the connection must close.
					serr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	if serr != nil {
		return fmt.Errorf("sendfile %d bytes of %s at %d: %w", f.Len, f.File.Name(), f.Off, serr)
	}
	return nil
}
