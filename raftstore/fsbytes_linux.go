package raftstore

import "golang.org/x/sys/unix"

// filesystemBytes is the size of the filesystem holding dir: its blocks
// count in fragment-size units (f_frsize), which some filesystems report
// apart from the preferred I/O size (f_bsize).
func filesystemBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	frsize := uint64(st.Frsize)
	if frsize == 0 {
		frsize = uint64(st.Bsize)
	}
	return st.Blocks * frsize, true
}
