//go:build !linux

package raftstore

// filesystemBytes is not looked up here: raft-wal's default segment size.
func filesystemBytes(string) (uint64, bool) { return 0, false }

// filesystemSpace is not looked up here: free space is never judged low.
func filesystemSpace(string) (total, avail uint64, ok bool) { return 0, 0, false }
