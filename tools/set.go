package tools

import (
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
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
	// Logger receives internal errors; nil discards them.
	Logger  *slog.Logger
	Surface Surface
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}

// takesOpID reports whether writes on this surface take an op_id argument.
func (d Deps) takesOpID() bool { return d.Surface == Operator || d.Surface == "" }

// readOptions is what a read on this surface asks: linearizable, with no
// level argument (the surface, not the caller, sets the level).
func (d Deps) readOptions() engine.ReadOptions {
	return engine.ReadOptions{Level: engine.Linearizable}
}

// writeOptions is what a write on this surface brings: the op_id the
// caller brought back, or none (the engine mints a fresh one).
func (d Deps) writeOptions(a args) engine.WriteOptions {
	if !d.takesOpID() {
		return engine.WriteOptions{}
	}
	return engine.WriteOptions{OpID: a.str(argOpID)}
}

// Constructor builds one tool: its definition and its handler.
type Constructor func(Deps) (mcp.Tool, server.ToolHandlerFunc)

// TrackerReads and TrackerWrites are the tracker's tools, split by read
// versus write so a read-only toolset is one line.
var (
	TrackerReads  = []Constructor{ListProjects, GetWorkItem, ListWorkItems}
	TrackerWrites = []Constructor{CreateProject, CreateWorkItem, UpdateWorkItem}
)

// Set builds the tools of one surface from its dependencies.
func Set(d Deps) []server.ServerTool {
	var ctors []Constructor
	switch d.Surface {
	case Operator, "":
		ctors = append(append(ctors, TrackerReads...), TrackerWrites...)
		if d.KB != nil {
			ctors = append(append(append(ctors, KBReads...), KBWrites...), KBOperator...)
		}
	}
	out := make([]server.ServerTool, 0, len(ctors))
	for _, c := range ctors {
		t, h := c(d)
		out = append(out, server.ServerTool{Tool: t, Handler: h})
	}
	return out
}
