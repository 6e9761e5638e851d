package peerbench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a target whose server processes the bench can see: the
// memory they hold resident together now.
type Memory interface {
	ServerMemory() (Resident, error)
}

// Resident is memory held resident, two ways. RSS counts every page a
// process maps, once for each mapping: a Crewlet node's SQLite
// connections each map the database file (mmap_size), so a page of it
// read through four connections is four pages of RSS, though it is one
// page of the kernel's page cache, which a process reading the file with
// read(2), as rqlite's SQLite does, holds as well and is not charged for.
// PSS (proportional set size) counts each page once, shared among the
// mappings and processes that map it: the figure to compare across
// targets that map files differently.
type Resident struct {
	RSS, PSS int64
}

// processesMemory is the resident memory of the processes pids
// together, from /proc (status's VmRSS, smaps_rollup's Pss); an error
// elsewhere than Linux or for a process that is gone.
func processesMemory(pids []int) (Resident, error) {
	if len(pids) == 0 {
		return Resident{}, errNoProcesses
	}
	var sum Resident
	for _, pid := range pids {
		rss, err := procKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
		if err != nil {
			return Resident{}, err
		}
		pss, err := procKB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
		if err != nil {
			return Resident{}, err
		}
		sum.RSS += rss << 10
		sum.PSS += pss << 10
	}
	return sum, nil
}

// procKB reads the first line of file that starts with key, in KiB.
func procKB(file, key string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	kb, err := kBLine(string(b), key)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return kb, nil
}

// kBLine reads the line of text that starts with key ("VmRSS:  51200
// kB"), in KiB.
func kBLine(text, key string) (int64, error) {
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, key); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("%s line %q", key, l)
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, errors.New("no " + key + " line")
}

// ServerMemory is the memory the nodes' processes hold, where the bench
// started them (PIDs).
func (c *Crewlet) ServerMemory() (Resident, error) { return processesMemory(c.PIDs) }

// ServerMemory is the memory the rqlite nodes' processes hold, where the
// bench started them (PIDs).
func (r *Rqlite) ServerMemory() (Resident, error) { return processesMemory(r.PIDs) }
