package peerbench

import "testing"

// TestKBLine reads a /proc line in KiB, and refuses a file without one
// or with another unit.
func TestKBLine(t *testing.T) {
	got, err := kBLine("Name:\tcrewlet\nVmPeak:\t  9000 kB\nVmRSS:\t   51200 kB\nThreads:\t12\n", "VmRSS:")
	if err != nil || got != 51200 {
		t.Errorf("kBLine = %d, %v; want 51200", got, err)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n"} {
		if _, err := kBLine(bad, "VmRSS:"); err == nil {
			t.Errorf("kBLine(%q) took it", bad)
		}
	}
}
