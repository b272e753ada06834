//go:build !linux

package raftstore

// filesystemBytes is not looked up here: raft-wal's default segment size.
func filesystemBytes(string) (uint64, bool) { return 0, false }
