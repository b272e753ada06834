//go:build !linux

package wire

import (
	"errors"
	"syscall"
)

const canSendFile = false

func sendFile(syscall.RawConn, *FileRecords) error {
	return errors.New("sendfile is not supported on this platform")
}
