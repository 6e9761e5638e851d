//go:build unix

package httpedge_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/crewlet/crewlet/internal/httpedge"
)

// TestFitConnections: under an open-file limit of 1 024, the default cap
// (1 024) is lowered to what the limit leaves beside the node's own
// descriptors, a configured cap that does not fit is refused naming both
// numbers, and one that fits stands.
func TestFitConnections(t *testing.T) {
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Skip(err)
	}
	const limit = 1024
	if was.Cur < limit {
		t.Skipf("the open-file limit is already %d", was.Cur)
	}
	lowered := was
	lowered.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Skip(err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
			t.Fatal(err)
		}
	}()
	room := limit - httpedge.ReservedFiles
	if max, low, err := httpedge.FitConnections(0); err != nil || !low || max != room {
		t.Errorf("default: %d %v %v, want %d lowered", max, low, err, room)
	}
	if _, _, err := httpedge.FitConnections(limit); err == nil || !strings.Contains(err.Error(), "http.max_connections") || !strings.Contains(err.Error(), "1024") {
		t.Errorf("a configured cap past the limit: %v", err)
	}
	if max, low, err := httpedge.FitConnections(100); err != nil || low || max != 100 {
		t.Errorf("a configured cap that fits: %d %v %v", max, low, err)
	}
}
