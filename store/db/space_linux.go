package db

import (
	"os"

	"golang.org/x/sys/unix"
)

// freeSpace is the space left for an unprivileged writer on the file
// system holding dir.
func freeSpace(dir string) (free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}

// seekData is the offset of the first data (not a hole) at or after off,
// false when there is none.
func seekData(f *os.File, off int64) (int64, bool) {
	d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if err != nil {
		return off, err != unix.ENXIO // ENXIO: no data after off; else not supported: read on
	}
	return d, true
}
