package peerbench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUMeter is a target whose server processes the bench can see: the CPU
// time they have used so far. Divided by the operations a measurement
// completed, it is what an operation cost the servers, a figure that,
// unlike a rate, does not depend on how much of the cores the machine's
// other tenants left them (the bench's own client is not in it).
type CPUMeter interface {
	ServerCPU() (time.Duration, error)
}

// errNoProcesses is a target reached by URL only: its processes are not
// the bench's to read.
var errNoProcesses = errors.New("peerbench: the target's processes are unknown (reached by URL)")

// clockTicks is the unit of /proc/<pid>/stat's times: USER_HZ, which the
// Linux /proc interface fixes at 100 a second.
const clockTicks = 100

// processesCPU is the user and system CPU time the processes pids have
// used so far (every thread of each), from /proc; an error elsewhere
// than Linux or for a process that is gone.
func processesCPU(pids []int) (time.Duration, error) {
	if len(pids) == 0 {
		return 0, errNoProcesses
	}
	var ticks uint64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		t, err := statTicks(string(b))
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// statTicks is utime + stime of one /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces or parentheses of
// its own, so the fields are counted from the last ')': utime and stime
// are the 14th and 15th fields, the 12th and 13th after it.
func statTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	user, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	sys, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return user + sys, nil
}

// ServerCPU is the CPU time the nodes' processes have used, where the
// bench started them (PIDs).
func (c *Crewlet) ServerCPU() (time.Duration, error) { return processesCPU(c.PIDs) }

// ServerCPU is the CPU time the rqlite nodes' processes have used, where
// the bench started them (PIDs).
func (r *Rqlite) ServerCPU() (time.Duration, error) { return processesCPU(r.PIDs) }
