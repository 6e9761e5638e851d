package enginetest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and returns
// it: a volume of known size, which a test can fill for real. Its pages
// are taken only as they are written, so a large one costs nothing
// until used. The test is skipped, saying why, where no tmpfs can be
// mounted (not Linux, not root, no mount). It is unmounted when the test
// ends, after the cleanups registered later (a node on it closes first).
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("a tmpfs volume of known size needs Linux (this is %s)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs volume of known size needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs volume of known size (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount the tmpfs at %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
