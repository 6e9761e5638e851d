package enginetest

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time, user and system, this process has used so
// far. A benchmark reports its difference over a phase beside the phase's
// rate, so a figure taken with the machine's cores saturated says so.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
