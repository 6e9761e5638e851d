package node_test

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
)

// TestAppliersCarryTheirDomainsProfileLabel: each domain's applier runs
// under the pprof label domain=<name>, so a CPU profile of a node
// (crewlet serve --pprof) splits the applies by domain
// (go tool pprof -tags).
func TestAppliersCarryTheirDomainsProfileLabel(t *testing.T) {
	n := enginetest.OpenNode(t, node.Config{})
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	for _, d := range []engine.Domain{engine.DomainTracker} {
		if !strings.Contains(b.String(), `"domain":"`+string(d)+`"`) {
			t.Errorf("no goroutine of node %s is labelled domain=%s:\n%.3000s", n.Name(), d, b.String())
		}
	}
}
