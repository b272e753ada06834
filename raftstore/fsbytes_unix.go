//go:build unix

package raftstore

import "golang.org/x/sys/unix"

// filesystemBytes is the size of the filesystem holding dir.
func filesystemBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Blocks) * uint64(st.Bsize), true
}
