package domains_test

import (
	"testing"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools"
)

// TestBuiltinBindsToARealNode: every domain of the registry runs on a
// node opened with the registry's specs, its service is what its tools
// call (Of's binding would panic otherwise), and its toolset offers tools
// over it; the registry begins with the engine's own domains, which
// engine tests run by default.
func TestBuiltinBindsToARealNode(t *testing.T) {
	reg := domains.Builtin()
	for i, sp := range node.Builtin() {
		if i >= len(reg) || reg[i].Spec.Name() != sp.Name() || reg[i].Spec.Stream != sp.Stream {
			t.Fatalf("the registry does not begin with the engine's domains: %d is %v", i, sp.Name())
		}
	}
	n := enginetest.OpenNode(t, node.Config{Domains: reg.Specs()})
	var withTools domains.Registry
	for _, d := range reg {
		if n.Service(d.Spec.Name()) == nil {
			t.Errorf("domain %s runs no service", d.Spec.Name())
		}
		if d.HasTools() {
			withTools = append(withTools, d)
		}
	}
	cat := reg.Toolsets(n.Service)
	if len(cat) != len(withTools) || len(withTools) < 2 {
		t.Fatalf("%d toolsets bound over the %d domains with tools", len(cat), len(withTools))
	}
	for i, ts := range cat {
		if len(ts.Entries) == 0 || len((tools.Catalogue{ts}).Set(tools.Deps{Surface: tools.Operator})) == 0 {
			t.Errorf("domain %s: its toolset %q offers no tool over its service", withTools[i].Spec.Name(), ts.Name)
		}
	}
	defs := reg.Definitions()
	for i, ts := range defs {
		if ts.Name != cat[i].Name || len(ts.Entries) != len(cat[i].Entries) {
			t.Errorf("domain %s: its definitions are not its tools", withTools[i].Spec.Name())
		}
	}
}
