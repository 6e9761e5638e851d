package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/statelog"
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

func init() {
	register(
		Entry{Build: EvictNode, OperatorOnly: true, Needs: needs[Fleet], Toolset: ToolsetFleet},
		Entry{Build: ReadmitNode, OperatorOnly: true, Needs: needs[Fleet], Toolset: ToolsetFleet},
		Entry{Build: RetentionStatus, Read: true, OperatorOnly: true, Needs: needs[Retention], Toolset: ToolsetFleet},
	)
}

func (d Deps) fleet() Fleet {
	f, _ := service[Fleet](d)
	return f
}

func (d Deps) retention() Retention {
	r, _ := service[Retention](d)
	return r
}

// RetentionStatus is retention_status {}: the replication answer.
func RetentionStatus(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	var params []param
	tool := newTool(NameRetentionStatus,
		"How far each data node has applied each log (operator only): seq and applied_through per node and domain beside GEN and lag, each log's range, and the instants (stream_created_at, checkpoint_stored_at). A replication answer, so its level is not yours to choose: stale, or consistent_prefix with a note when this node cannot measure its lag.",
		params, readAnnotations("Retention status"), outputSchema[fleet.Answer]())
	check := func(args) *engine.Refusal {
		if !needs[Retention](d) {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is for operators only, on a data node.", NameRetentionStatus)
		}
		return nil
	}
	return tool, d.readHandler(NameRetentionStatus, params, check, func(ctx context.Context, _ args) (any, error) {
		return d.retention().Answer(ctx)
	})
}

var nodeParam = param{name: "node", kind: kindString, required: true, nonEmpty: true, maxBytes: 63,
	desc: "The node's node.name, as crewlet retention status lists it."}

// EvictNode is evict_node {node}.
func EvictNode(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameEvictNode, "Evict node",
		"Remove a data node from the fleet (operator only): from its eviction record on, every record that node appends applies on no node, and its own reads and writes refuse evicted. Run it on another node; readmit_node undoes it.",
		true, func(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error) {
			return d.fleet().EvictNode(ctx, w, node)
		})
}

// ReadmitNode is readmit_node {node}.
func ReadmitNode(d Deps) (mcp.Tool, server.ToolHandlerFunc) {
	return nodeGateTool(d, NameReadmitNode, "Readmit node",
		"Readmit an evicted data node (operator only): what it appends after the readmission applies again; what it appended while evicted stays dropped.",
		false, func(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error) {
			return d.fleet().ReadmitNode(ctx, w, node)
		})
}

func nodeGateTool(d Deps, name, title, desc string, destructive bool, run func(context.Context, engine.WriteOptions, string) (statelog.NodeGateWrite, error)) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.withOpID([]param{nodeParam})
	ann := writeAnnotations(title, true)
	// Idempotent: gating a node that stands so changes nothing. Eviction is
	// destructive: that node's later appends are lost to the fleet.
	ann = append(ann, mcp.WithDestructiveHintAnnotation(destructive))
	tool := newTool(name, d.writeDesc(desc), params, ann, outputSchema[statelog.NodeGateWrite]())
	return tool, d.writeHandler(name, params, func(args) *engine.Refusal {
		if d.Surface == Seat || !needs[Fleet](d) {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is for operators only, on a data node.", name)
		}
		return nil
	}, func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error) {
		res, err := run(ctx, w, a.str("node"))
		d.explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}
