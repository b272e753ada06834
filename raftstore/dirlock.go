package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirLock holds an exclusive lock on a data directory, so a second brokerd
// on the same directory fails at once instead of hanging on bolt's locks or
// corrupting state.
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another brokerd (lock %s): %w", dir, path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) Close() error {
	if l == nil {
		return nil
	}
	return l.f.Close() // closing releases the lock
}
