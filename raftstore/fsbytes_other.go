//go:build !unix

package raftstore

// filesystemBytes is unknown here: raft-wal's default segment size.
func filesystemBytes(string) (uint64, bool) { return 0, false }
