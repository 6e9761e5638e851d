package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
)

// Fleet is the node gate: evicting and readmitting data nodes (operator
// only). *fleet.NodeGates satisfies it.
type Fleet interface {
	EvictNode(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error)
	ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error)
}

var _ Fleet = (*fleet.NodeGates)(nil)

// Names of the node-gate tools.
const (
	NameEvictNode   = "evict_node"
	NameReadmitNode = "readmit_node"
)

// FleetOperator are the node-gate tools: the operator surface only.
var FleetOperator = []Constructor{EvictNode, ReadmitNode}

var nodeParam = param{name: "node", kind: kindString, required: true, nonEmpty: true, maxBytes: 63,
	desc: "The node's node.name, as crewlet retention status lists it."}

// EvictNode is evict_node {node}.
func EvictNode(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameEvictNode, "Evict node",
		"Remove a data node from the fleet (operator only): from its eviction record on, every record that node appends applies on no node, and its own reads and writes refuse evicted. Run it on another node; readmit_node undoes it.",
		true, func(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error) {
			return d.Fleet.EvictNode(ctx, w, node)
		})
}

// ReadmitNode is readmit_node {node}.
func ReadmitNode(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameReadmitNode, "Readmit node",
		"Readmit an evicted data node (operator only): what it appends after the readmission applies again; what it appended while evicted stays dropped.",
		false, func(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error) {
			return d.Fleet.ReadmitNode(ctx, w, node)
		})
}

func nodeGateTool(d Deps, name, title, desc string, destructive bool, run func(context.Context, engine.WriteOptions, string) (fleet.NodeGateWrite, error)) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{nodeParam})
	ann := writeAnnotations(title, true)
	// Idempotent: gating a node that stands so changes nothing. Eviction is
	// destructive: that node's later appends are lost to the fleet.
	ann = append(ann, mcp.WithDestructiveHintAnnotation(destructive))
	tool := newTool(name, d.writeDesc(desc), params, ann, outputSchema[fleet.NodeGateWrite]())
	return tool, d.writeHandler(name, params, func(args) *engine.Refusal {
		if d.Surface == Seat || d.Fleet == nil {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is for operators only, on a data node.", name)
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, string, error) {
		res, err := run(ctx, w, a.str("node"))
		return res.WriteResult, res, writeText(name+" "+a.str("node"), res.WriteResult), err
	})
}
