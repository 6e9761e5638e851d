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

// Deps is what every tool constructor is built from: the surface and
// what it brings. The service a tool calls is not here: each toolset is
// bound to its own service when it is built (see Toolset).
type Deps struct {
	// Logger receives internal errors; nil discards them.
	Logger  *slog.Logger
	Surface Surface
	// Units derives a seat's op ids (the seat surface only).
	Units Units
	// Floors is the node's read-your-writes floor table (the seat surface
	// only): a seat's reads carry its floor on their log.
	Floors Floors
	// Filter narrows the surface's toolset (--toolsets, --read-only).
	Filter Filter
	// Calls counts the calls of every tool built (the node's metrics);
	// nil counts none.
	Calls CallObserver
}

// Log is the logger of the tools' internal errors.
func (d Deps) Log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}

// TakesOpID reports whether writes on this surface take an op_id argument.
func (d Deps) TakesOpID() bool { return d.Surface == Operator }

// ReadOptions is what a read of a domain on this surface asks:
// linearizable, with no level argument (the surface, not the caller, sets
// the level), and on the seat surface floored at the turn's trigger.
func (d Deps) ReadOptions(ctx context.Context, stream string) engine.ReadOptions {
	r := engine.ReadOptions{Level: engine.Linearizable}
	if d.Surface == Seat {
		r.MinPosition = d.SeatFloor(ctx, stream)
	}
	return r
}

// writeOptions is what a write on this surface brings: the digest of the
// call (the tool and its arguments but op_id), and the op_id the caller
// brought back, or none (the engine mints a fresh one, sealed to the call).
// On the seat surface the id derives from the turn instead.
func (d Deps) writeOptions(ctx context.Context, tool string, a Args) (engine.WriteOptions, error) {
	call := make(map[string]any, len(a))
	for k, v := range a {
		if k != ArgOpID {
			call[k] = v
		}
	}
	w := engine.WriteOptions{Digest: ledger.Digest(tool, call)}
	if d.Surface == Seat {
		return d.seatWrite(ctx, tool, w)
	}
	if d.TakesOpID() {
		w.OpID = a.Str(ArgOpID)
	}
	return w, nil
}

// Constructor builds one tool: its definition and its handler.
type Constructor func(Deps) (mcp.Tool, server.ToolHandlerFunc)

// Entry is one tool of a toolset: how to build it, and what decides the
// surfaces it is on.
type Entry struct {
	Build Constructor
	// Read says the tool changes nothing: it is in the read-only toolset.
	Read bool
	// OperatorOnly keeps the tool off the seat surface (purges, node
	// gates, the replication answer).
	OperatorOnly bool
	// SeatOnly keeps the tool on the seat surface alone (a turn's start
	// and end).
	SeatOnly bool
	// Needs says whether the service the toolset is bound to does what
	// the tool calls (an optional part of it); nil: it does. Definitions
	// do not ask.
	Needs func() bool
}

// offers reports whether surface s offers tool e.
func (s Surface) offers(e Entry) bool {
	switch s {
	case Operator:
		return !e.SeatOnly
	case Seat:
		return !e.OperatorOnly
	case ReadOnly:
		return e.Read && !e.SeatOnly
	}
	return false
}

// Set builds the tools of one surface: the catalogue's entries the surface
// offers and its filter keeps, whose service does what they call. A Deps
// that names no surface is a wiring mistake, never the operator's toolset.
func (c Catalogue) Set(d Deps) []server.ServerTool {
	mustSurface(d.Surface)
	var out []server.ServerTool
	obs := c.observers()
	for _, ts := range c {
		for _, e := range ts.Entries {
			if d.Surface.offers(e) && d.Filter.Keeps(ts.Name, e.Read) && (e.Needs == nil || e.Needs()) {
				t, h := e.Build(d)
				out = append(out, server.ServerTool{Tool: d.Surface.annotate(t, e), Handler: d.observed(t.Name, d.served(t.Name, h, obs))})
			}
		}
	}
	return out
}

// SeatOnly names the catalogue's tools that are on the seat surface
// alone (a turn's start and end).
func (c Catalogue) SeatOnly() map[string]bool {
	out := map[string]bool{}
	for _, ts := range c {
		for _, e := range ts.Entries {
			if e.SeatOnly {
				t, _ := e.Build(Deps{Surface: Seat})
				out[t.Name] = true
			}
		}
	}
	return out
}

// Definitions are the tools of a surface, narrowed by f, without their
// handlers: what a node without the data role offers, sending each call
// on to a data node (build its catalogue over no service).
func (c Catalogue) Definitions(s Surface, f Filter) []mcp.Tool {
	mustSurface(s)
	var out []mcp.Tool
	for _, ts := range c {
		for _, e := range ts.Entries {
			if s.offers(e) && f.Keeps(ts.Name, e.Read) {
				t, _ := e.Build(Deps{Surface: s})
				out = append(out, s.annotate(t, e))
			}
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
