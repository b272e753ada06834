package raftstore

import (
	"errors"
	"syscall"
	"time"

	"github.com/brokerd/brokerd/log"
)

// isNoSpace reports whether err is a write refused for lack of space
// (ENOSPC, or EDQUOT over a quota) that can be tried again: a failed fsync
// is never one, whatever its errno, since the kernel may have dropped the
// pages it could not write.
func isNoSpace(err error) bool {
	return (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) && !errors.Is(err, log.ErrSyncFailed)
}

// whileNoSpace runs op and, while it fails for lack of space, waits and
// runs it again. An entry being applied is committed: every replica must
// apply it as it is, so failing it would stop the node for good, and
// skipping it would leave this replica different. Waiting stalls apply
// (and the guard refuses new writes meanwhile) until space is freed. op
// must leave nothing behind when it fails. what names the waiting write
// in /readyz and the logs. It gives up, returning op's error, when the
// store closes.
func (f *fsm) whileNoSpace(what string, op func() error) error {
	err := op()
	if !isNoSpace(err) || f.space == nil {
		return err
	}
	f.space.wait(what, err)
	defer f.space.done(what)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		select {
		case <-f.stop:
			return err
		case <-time.After(delay):
		}
		if err = op(); !isNoSpace(err) {
			return err
		}
	}
}
