package fleettools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/tools"
)

// Fleet is the node gate: evicting and readmitting data nodes (operator
// only). *statelog.NodeGates satisfies it.
type Fleet interface {
	EvictNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
	ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
}

var _ Fleet = (*statelog.NodeGates)(nil)

// Retention answers about replication: how far each data node has
// applied each log. *fleet.Status satisfies it.
type Retention interface {
	Answer(ctx context.Context) (fleet.Answer, error)
}

var _ Retention = (*fleet.Status)(nil)

// Names of the replication tools.
const (
	NameEvictNode       = "evict_node"
	NameReadmitNode     = "readmit_node"
	NameRetentionStatus = "retention_status"
)

// Name is the replication tools' toolset name (--toolsets fleet).
const Name = "fleet"

// Toolset is the replication tools over the node's gates and its
// replication answer, every one operator only. A nil gates or retention
// leaves its tools out; Toolset(nil, nil) builds the definitions alone.
func Toolset(gates Fleet, retention Retention) tools.Toolset {
	d := env{gates: gates, retention: retention}
	hasGates := func() bool { return gates != nil }
	return tools.Toolset{Name: Name, Entries: []tools.Entry{
		{Build: d.bind(evictNode), OperatorOnly: true, Needs: hasGates},
		{Build: d.bind(readmitNode), OperatorOnly: true, Needs: hasGates},
		{Build: d.bind(retentionStatus), Read: true, OperatorOnly: true, Needs: func() bool { return retention != nil }},
	}}
}

// env is what a replication tool is built over: the surface's Deps and
// the services it calls.
type env struct {
	tools.Deps
	gates     Fleet
	retention Retention
}

// bind makes a tool constructor of one over env.
func (d env) bind(f func(env) (mcp.Tool, server.ToolHandlerFunc)) tools.Constructor {
	return func(deps tools.Deps) (mcp.Tool, server.ToolHandlerFunc) {
		d.Deps = deps
		return f(d)
	}
}

func (d env) fleet() Fleet { return d.gates }

// retentionStatus is retention_status {}: the replication answer.
func retentionStatus(d env) (mcp.Tool, server.ToolHandlerFunc) {
	var params []tools.Param
	tool := tools.NewTool(NameRetentionStatus,
		"How far each data node has applied each log (operator only): seq and applied_through per node and domain beside GEN and lag, each log's range, and the instants (stream_created_at, checkpoint_stored_at). A replication answer, so its level is not yours to choose: stale, or consistent_prefix with a note when this node cannot measure its lag.",
		params, tools.ReadAnnotations("Retention status"), tools.OutputSchema[fleet.Answer]())
	check := func(tools.Args) *engine.Refusal {
		if d.retention == nil {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is for operators only, on a data node.", NameRetentionStatus)
		}
		return nil
	}
	return tool, d.ReadHandler(NameRetentionStatus, params, check, func(ctx context.Context, _ tools.Args) (any, error) {
		return d.retention.Answer(ctx)
	})
}

var nodeParam = tools.Param{Name: "node", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 63,
	Desc: "The node's node.name, as crewlet retention status lists it."}

// evictNode is evict_node {node}.
func evictNode(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameEvictNode, "Evict node",
		"Remove a data node from the fleet (operator only): from its eviction record on, every record that node appends applies on no node, and its own reads and writes refuse evicted. Run it on another node; readmit_node undoes it.",
		true, func(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error) {
			return d.fleet().EvictNode(ctx, w, node)
		})
}

// readmitNode is readmit_node {node}.
func readmitNode(d env) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameReadmitNode, "Readmit node",
		"Readmit an evicted data node (operator only): what it appends after the readmission applies again; what it appended while evicted stays dropped.",
		false, func(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error) {
			return d.fleet().ReadmitNode(ctx, w, node)
		})
}

func nodeGateTool(d env, name, title, desc string, destructive bool, run func(context.Context, engine.WriteOptions, string) (statelog.NodeGateWrite, error)) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{nodeParam})
	ann := tools.WriteAnnotations(title, true)
	// Idempotent: gating a node that stands so changes nothing. Eviction is
	// destructive: that node's later appends are lost to the fleet.
	ann = append(ann, mcp.WithDestructiveHintAnnotation(destructive))
	tool := tools.NewTool(name, d.WriteDesc(desc), params, ann, tools.OutputSchema[statelog.NodeGateWrite]())
	return tool, d.WriteHandler(name, params, func(tools.Args) *engine.Refusal {
		if d.Surface == tools.Seat || d.gates == nil {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is for operators only, on a data node.", name)
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := run(ctx, w, a.Str("node"))
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}
