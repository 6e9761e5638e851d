//go:build unix

package httpedge

import "syscall"

// openFileLimit is the process's soft limit on open files (Go raises it
// to the hard limit at start), 0 when it cannot be read or is unlimited.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == ^uint64(0) {
		return 0
	}
	return rl.Cur
}
