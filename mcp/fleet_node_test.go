package mcp

import (
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools/fleettools"
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
	c := inProcess(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker(), n.Pages(), n.NodeGates())))
	for _, name := range []string{fleettools.NameEvictNode, fleettools.NameReadmitNode} {
		res := callTool(t, c, name, map[string]any{"node": "n2"})
		m := object(t, res)
		steps, _ := m["steps"].([]any)
		if res.IsError || m["outcome"] != "applied" || len(steps) != 2 {
			t.Fatalf("%s: %v", name, m)
		}
	}
	res := callTool(t, c, fleettools.NameEvictNode, map[string]any{"node": "n1"})
	if m := object(t, res); !res.IsError || m["refused"] != "invalid_argument" {
		t.Fatalf("self-eviction: %v", m)
	}
}

// TestRetentionStatusTool: retention_status over the operator MCP of a
// real node is the replication answer — at stale, naming this node with
// its tracker and pages figures, the table as its text — and is read-only.
func TestRetentionStatusTool(t *testing.T) {
	n, err := node.Open(ctxT(t), node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	s := NewServer("test", testLogger(t), catalogueOf(n.Tracker(), n.Pages(), n.NodeGates(), n.Retention()))
	c := inProcess(t, s)
	list, err := c.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, tl := range list.Tools {
		if tl.Name == fleettools.NameRetentionStatus {
			found = true
			if tl.Annotations.ReadOnlyHint == nil || !*tl.Annotations.ReadOnlyHint {
				t.Fatal("retention_status is not annotated read-only")
			}
		}
	}
	if !found {
		t.Fatal("retention_status is not offered")
	}
	res := callTool(t, c, fleettools.NameRetentionStatus, map[string]any{})
	m := object(t, res)
	nodes, _ := m["nodes"].([]any)
	if res.IsError || m["level"] != "stale" || len(nodes) != 1 {
		t.Fatalf("retention_status: %v", m)
	}
	domains, _ := nodes[0].(map[string]any)["domains"].([]any)
	if nodes[0].(map[string]any)["node"] != "n1" || len(domains) != 2 {
		t.Fatalf("retention_status names %v", nodes[0])
	}
	if res := callTool(t, c, fleettools.NameRetentionStatus, map[string]any{"level": "linearizable"}); !res.IsError {
		t.Fatalf("retention_status took a level argument: %s", textOf(res))
	}
}
