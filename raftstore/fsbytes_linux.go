package raftstore

import "golang.org/x/sys/unix"

// filesystemBytes is the size of the filesystem holding dir: its blocks
// count in fragment-size units (f_frsize), which some filesystems report
// apart from the preferred I/O size (f_bsize).
func filesystemBytes(dir string) (uint64, bool) {
	total, _, ok := filesystemSpace(dir)
	return total, ok
}

// filesystemSpace is the size of the filesystem holding dir and the bytes
// on it still available to an unprivileged writer (f_bavail: the blocks
// some filesystems keep back for root are not counted as free).
func filesystemSpace(dir string) (total, avail uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	frsize := uint64(st.Frsize)
	if frsize == 0 {
		frsize = uint64(st.Bsize)
	}
	return st.Blocks * frsize, st.Bavail * frsize, true
}
