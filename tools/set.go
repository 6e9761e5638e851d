package tools

import (
	"context"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/ledger"
)

// Surface names who calls the tools. The surfaces differ in what a call
// brings: the operator MCP and the assistant over stdio take an optional
// op_id on writes and read at linearizable; the seat surface (a later
// issue) derives op ids from the unit of work and floors its reads, so it
// gets its own Surface and its own read and write options here.
type Surface string

// The surfaces this build serves.
const (
	// Operator is the operator MCP over HTTP and the assistant over stdio:
	// the same toolset, reads at linearizable, writes take op_id.
	Operator Surface = "operator"
)

// Deps is what every tool constructor is built from.
type Deps struct {
	Tracker Tracker
	// KB is the knowledge base; nil leaves its tools out of the set.
	KB KB
	// Fleet is the node gate; nil leaves evict_node and readmit_node out.
	Fleet Fleet
	// Retention is the replication answer; nil leaves retention_status out.
	Retention Retention
	// Logger receives internal errors; nil discards them.
	Logger  *slog.Logger
	Surface Surface
	// Units derives a seat's op ids (the seat surface only).
	Units Units
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}

// takesOpID reports whether writes on this surface take an op_id argument.
func (d Deps) takesOpID() bool { return d.Surface == Operator || d.Surface == "" }

// readOptions is what a read of a domain on this surface asks:
// linearizable, with no level argument (the surface, not the caller, sets
// the level), and on the seat surface floored at the turn's trigger.
func (d Deps) readOptions(ctx context.Context, stream string) engine.ReadOptions {
	r := engine.ReadOptions{Level: engine.Linearizable}
	if d.Surface == Seat {
		r.MinPosition = seatFloor(ctx, stream)
	}
	return r
}

// writeOptions is what a write on this surface brings: the digest of the
// call (the tool and its arguments but op_id), and the op_id the caller
// brought back, or none (the engine mints a fresh one, sealed to the call).
// On the seat surface the id derives from the turn instead.
func (d Deps) writeOptions(ctx context.Context, tool string, a args) (engine.WriteOptions, error) {
	call := make(map[string]any, len(a))
	for k, v := range a {
		if k != argOpID {
			call[k] = v
		}
	}
	w := engine.WriteOptions{Digest: ledger.Digest(tool, call)}
	if d.Surface == Seat {
		return d.seatWrite(ctx, tool, w)
	}
	if d.takesOpID() {
		w.OpID = a.str(argOpID)
	}
	return w, nil
}

// Constructor builds one tool: its definition and its handler.
type Constructor func(Deps) (mcp.Tool, server.ToolHandlerFunc)

// TrackerReads and TrackerWrites are the tracker's tools, split by read
// versus write so a read-only toolset is one line.
var (
	TrackerReads  = []Constructor{ListProjects, GetWorkItem, ListWorkItems, SearchWorkItems}
	TrackerWrites = []Constructor{CreateProject, CreateWorkItem, UpdateWorkItem,
		CommentOnWorkItem, MoveWorkItem, MergeWorkItems, TrashWorkItem, RestoreWorkItem}
	// TrackerOperatorOnly are the tracker's tools no seat gets.
	TrackerOperatorOnly = []Constructor{PurgeWorkItem}
)

// Set builds the tools of one surface from its dependencies.
func Set(d Deps) []server.ServerTool {
	ctors := constructors(d.Surface, d.KB != nil, d.Fleet != nil, d.Retention != nil)
	out := make([]server.ServerTool, 0, len(ctors))
	for _, c := range ctors {
		t, h := c(d)
		out = append(out, server.ServerTool{Tool: t, Handler: h})
	}
	return out
}

// Definitions are the tools of a surface with every domain, without
// their handlers: what a node without the data role offers, sending each
// call on to a data node.
func Definitions(s Surface) []mcp.Tool {
	ctors := constructors(s, true, true, true)
	out := make([]mcp.Tool, 0, len(ctors))
	for _, c := range ctors {
		t, _ := c(Deps{Surface: s})
		out = append(out, t)
	}
	return out
}

// constructors are the tools of a surface: the knowledge base's where kb,
// the node gates where fleet, the replication answer where retention.
func constructors(s Surface, kb, fleet, retention bool) []Constructor {
	var ctors []Constructor
	switch s {
	case Operator, "", Seat:
		ctors = append(append(ctors, TrackerReads...), TrackerWrites...)
		if kb {
			ctors = append(append(ctors, KBReads...), KBWrites...)
			if s != Seat {
				ctors = append(ctors, KBOperator...)
			}
		}
	}
	if s == Operator || s == "" {
		ctors = append(ctors, TrackerOperatorOnly...)
		if fleet {
			ctors = append(ctors, FleetOperator...)
		}
		if retention {
			ctors = append(ctors, RetentionOperator...)
		}
	}
	return ctors
}
