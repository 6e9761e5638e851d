package peerbench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestStatTicks: utime and stime are found by counting from the last ')'
// of the command name, which may hold spaces and parentheses itself.
func TestStatTicks(t *testing.T) {
	for _, c := range []struct {
		line string
		want uint64
	}{
		{"42 (rqlited) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0", 325},
		{"7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0", 7},
	} {
		got, err := statTicks(c.line)
		if err != nil || got != c.want {
			t.Errorf("statTicks(%q) = %d, %v; want %d", c.line, got, err, c.want)
		}
	}
	for _, bad := range []string{"no parenthesis", "1 (x) S 1 2"} {
		if _, err := statTicks(bad); err == nil {
			t.Errorf("statTicks(%q) took a line too short", bad)
		}
	}
}

// TestProcessesCPU reads this process's CPU time from /proc: it grows
// while a busy loop runs, and a target reached by URL only has none to
// read.
func TestProcessesCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, err := processesCPU([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// Busy until the reading moves by a tick (10 ms of CPU): on a loaded
	// machine that takes longer, never forever.
	deadline := time.Now().Add(time.Minute)
	for {
		for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
		}
		after, err := processesCPU([]int{os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time did not move over a minute of busy loops: %v", after)
		}
	}
	if _, err := processesCPU(nil); err != errNoProcesses {
		t.Errorf("no processes: %v", err)
	}
}
