//go:build linux || darwin || freebsd

package broker

import "syscall"

// statfsFree is the space available to an unprivileged writer on the
// volume holding path.
func statfsFree(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}
