package tools

import (
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// The toolsets --toolsets names, each a group of the catalogue: a host
// that only tracks work leaves the knowledge base's tools off its
// model's list, as github-mcp-server's --toolsets does.
const (
	// ToolsetTracker is projects and work items.
	ToolsetTracker = "tracker"
	// ToolsetKB is the knowledge base: spaces and pages.
	ToolsetKB = "kb"
	// ToolsetFleet is the replication tools (operator only).
	ToolsetFleet = "fleet"
	// ToolsetAll names every toolset.
	ToolsetAll = "all"
)

// Toolsets are the toolset names --toolsets takes, "all" aside.
var Toolsets = []string{ToolsetTracker, ToolsetKB, ToolsetFleet}

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

// ParseToolsets reads a --toolsets value: toolset names separated by
// commas, or "all". It refuses an unknown name with the list of known
// ones.
func ParseToolsets(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case n == ToolsetAll:
			return nil, nil
		case !slices.Contains(Toolsets, n):
			return nil, engine.Refuse(engine.CodeInvalidArgument, "toolset %q is not one of %s (or all); name toolsets separated by commas.", n, strings.Join(Toolsets, ", "))
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out, nil
}

// keeps reports whether f keeps e.
func (f Filter) keeps(e Entry) bool {
	if f.ReadOnly && !e.Read {
		return false
	}
	return len(f.Toolsets) == 0 || slices.Contains(f.Toolsets, e.Toolset)
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
	if s == Seat && !e.Read {
		t.Annotations.IdempotentHint = mcp.ToBoolPtr(true)
	}
	return t
}
