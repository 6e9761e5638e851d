package tools

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/ledger"
)

// Surface names who calls the tools. The surfaces differ in what a call
// brings: the operator MCP and the assistant over stdio take an optional
// op_id on writes and read at linearizable; the seat surface derives op
// ids from the unit of work and floors its reads; the read-only surface
// offers the reads alone.
type Surface string

// The surfaces this build serves. Every toolset is a filter over one
// catalogue (see offers); there is no default surface.
const (
	// Operator is the operator MCP over HTTP and the assistant over stdio:
	// every tool, reads at linearizable, writes take op_id.
	Operator Surface = "operator"
	// ReadOnly offers the reads of every domain and nothing that writes.
	ReadOnly Surface = "read-only"
)

// Deps is what every tool constructor is built from.
type Deps struct {
	// Services are what the tools call: each domain's service, the node
	// gates and the replication answer. A tool is in the set only where a
	// service it calls is (Entry.Needs), so a node without a knowledge
	// base offers none of its tools.
	Services []any
	// Logger receives internal errors; nil discards them.
	Logger  *slog.Logger
	Surface Surface
	// Units derives a seat's op ids (the seat surface only).
	Units Units
	// Filter narrows the surface's toolset (--toolsets, --read-only).
	Filter Filter
}

// service is the first of d's services that is a T.
func service[T any](d Deps) (T, bool) {
	for _, s := range d.Services {
		if t, ok := s.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// needs is an Entry.Needs: d has a service that is a T.
func needs[T any](d Deps) bool {
	_, ok := service[T](d)
	return ok
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}

// takesOpID reports whether writes on this surface take an op_id argument.
func (d Deps) takesOpID() bool { return d.Surface == Operator }

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

// Entry is one tool of the catalogue: how to build it, and what decides
// the toolsets it is in.
type Entry struct {
	Build Constructor
	// Read says the tool changes nothing: it is in the read-only toolset.
	Read bool
	// OperatorOnly keeps the tool off the seat surface (purges, node
	// gates, the replication answer).
	OperatorOnly bool
	// Needs says whether d has the service the tool calls.
	Needs func(d Deps) bool
	// Toolset is the group --toolsets names the tool by (ToolsetTracker,
	// ToolsetKB, ToolsetFleet).
	Toolset string
}

// catalogue is every tool once, each domain's entries registered by its
// own tools file (register, from an init).
var catalogue []Entry

// register adds a domain's tools to the catalogue.
func register(entries ...Entry) { catalogue = append(catalogue, entries...) }

// offers reports whether surface s offers tool e.
func (s Surface) offers(e Entry) bool {
	switch s {
	case Operator:
		return true
	case Seat:
		return !e.OperatorOnly
	case ReadOnly:
		return e.Read
	}
	return false
}

// Set builds the tools of one surface: the catalogue's entries the surface
// offers whose services d has. A Deps that names no surface is a wiring
// mistake, never the operator's toolset.
func Set(d Deps) []server.ServerTool {
	mustSurface(d.Surface)
	var out []server.ServerTool
	for _, e := range catalogue {
		if d.Surface.offers(e) && d.Filter.keeps(e) && e.Needs(d) {
			t, h := e.Build(d)
			out = append(out, server.ServerTool{Tool: d.Surface.annotate(t, e), Handler: d.observed(t.Name, h)})
		}
	}
	return out
}

// Definitions are the tools of a surface with every domain, without
// their handlers: what a node without the data role offers, sending each
// call on to a data node.
func Definitions(s Surface) []mcp.Tool { return FilteredDefinitions(s, Filter{}) }

// FilteredDefinitions are Definitions narrowed by f.
func FilteredDefinitions(s Surface, f Filter) []mcp.Tool {
	mustSurface(s)
	var out []mcp.Tool
	for _, e := range catalogue {
		if s.offers(e) && f.keeps(e) {
			t, _ := e.Build(Deps{Surface: s})
			out = append(out, s.annotate(t, e))
		}
	}
	return out
}

func mustSurface(s Surface) {
	switch s {
	case Operator, Seat, ReadOnly:
		return
	}
	panic(fmt.Sprintf("tools: surface %q is not one of operator, seat, read-only: name the surface the toolset is for", s))
}
