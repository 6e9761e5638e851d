package tools

import (
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// ToolsetAll names every toolset in --toolsets.
const ToolsetAll = "all"

// Filter narrows a surface's toolset. The zero Filter keeps every tool
// the surface offers. It only ever removes: no filter gives a surface a
// tool it does not offer (a seat never gets purge_work_item).
type Filter struct {
	// Toolsets keeps only the tools of these toolsets; empty (or "all")
	// keeps every toolset.
	Toolsets []string
	// ReadOnly keeps only the tools that change nothing.
	ReadOnly bool
}

// Keeps reports whether f keeps a tool of the toolset named toolset,
// one that reads only where read says so.
func (f Filter) Keeps(toolset string, read bool) bool {
	if f.ReadOnly && !read {
		return false
	}
	return len(f.Toolsets) == 0 || slices.Contains(f.Toolsets, toolset)
}

// String describes f for a log line: "all", or the toolsets, and
// "read-only".
func (f Filter) String() string {
	s := ToolsetAll
	if len(f.Toolsets) > 0 {
		s = strings.Join(f.Toolsets, ",")
	}
	if f.ReadOnly {
		s += " read-only"
	}
	return s
}

// annotate fixes the one hint that depends on the surface. A seat's write
// is idempotent: its op id derives from the unit of work and the call's
// arguments, so the same call repeated in the same unit is the same
// operation and writes nothing twice. On the operator surface a write is
// idempotent only where the same arguments have no further effect without
// an op_id (an update to the same values, a trash of a trashed item); a
// create or a comment brought without op_id writes again, so it says
// false there even though, with the op_id of its first answer, it too
// happens once.
func (s Surface) annotate(t mcp.Tool, e Entry) mcp.Tool {
	if s == Seat && !e.Read && !e.SeatOnly {
		t.Annotations.IdempotentHint = mcp.ToBoolPtr(true)
	}
	return t
}
