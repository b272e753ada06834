//go:build !unix

package log

import "errors"

// dupCloexec is not supported here: ReadRange fails, and callers read.
func dupCloexec(int) (int, error) {
	return -1, errors.New("duplicating a descriptor is not supported on this platform")
}
