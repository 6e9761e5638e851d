package mcp

import (
	"testing"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools"
)

// TestNodeGateTools: evict_node and readmit_node over the operator MCP of
// a real node write one step per log and answer applied; a node cannot
// gate itself.
func TestNodeGateTools(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	c := inProcess(t, NewServer(n.Tracker(), "test", testLogger(t), WithKB(n.Pages()), WithFleet(n.NodeGates())))
	for _, name := range []string{tools.NameEvictNode, tools.NameReadmitNode} {
		res := callTool(t, c, name, map[string]any{"node": "n2"})
		m := object(t, res)
		steps, _ := m["steps"].([]any)
		if res.IsError || m["outcome"] != "applied" || len(steps) != 2 {
			t.Fatalf("%s: %v", name, m)
		}
	}
	res := callTool(t, c, tools.NameEvictNode, map[string]any{"node": "n1"})
	if m := object(t, res); !res.IsError || m["refused"] != "invalid_argument" {
		t.Fatalf("self-eviction: %v", m)
	}
}
