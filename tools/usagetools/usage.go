// Package usagetools is the usage domain's toolset: usage_report, the
// fleet's usage by day, seat and tool (operator only), and the observer
// that records every call every surface of the catalogue serves into the
// node's own record of what it served (the usage domain's source).
package usagetools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
	"github.com/crewlet/crewlet/tools"
)

// Names of the usage toolset and its tool.
const (
	Name            = "usage"
	NameUsageReport = "usage_report"
)

// Usage is what the tools call (*usage.Service).
type Usage interface {
	Usage(ctx context.Context, q usage.Query) (usage.Report, error)
	Record(c usage.Call)
}

var _ Usage = (*usage.Service)(nil)

// Toolset is the usage tools over svc, and the observer that records the
// calls served; Toolset(nil) builds the definitions alone.
func Toolset(svc Usage) tools.Toolset {
	ts := tools.Toolset{Name: Name, Entries: []tools.Entry{
		{Build: func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) { return usageReport(d, svc) }, Read: true, OperatorOnly: true,
			Needs: func() bool { return svc != nil }},
	}}
	if svc != nil {
		ts.Observe = func(_ context.Context, c tools.Served) { svc.Record(CallOf(c)) }
	}
	return ts
}

// CallOf is a served call as the usage domain records it: a seat's under
// "seat:" and its name, every other surface's under operator.
func CallOf(c tools.Served) usage.Call {
	seat := usagerec.Operator
	if c.Surface == tools.Seat && c.Seat != "" {
		seat = usagerec.SeatOf(c.Seat)
	}
	out := usage.Call{Seat: seat, Unit: c.Unit, Tool: c.Tool, Outcome: c.Outcome, Code: c.Code, Took: c.Took}
	for _, s := range c.Spend {
		out.Spend = append(out.Spend, usagerec.Spend{Model: s.Model, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CostMicros: s.CostMicros})
	}
	return out
}

var dayParam = func(name, desc string) tools.Param {
	return tools.Param{Name: name, Kind: tools.KindString, MaxBytes: 10, NonEmpty: true, Desc: desc}
}

// usageReport is usage_report {from, to, seat, tool, node}.
func usageReport(d tools.Deps, svc Usage) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{
		dayParam("from", "The first company day of the range, YYYY-MM-DD (default: 13 days before to)."),
		dayParam("to", "The last company day of the range, YYYY-MM-DD (default: today on the company's clock). At most 181 days in all."),
		{Name: "seat", Kind: tools.KindString, MaxBytes: 200, NonEmpty: true, Desc: "Only this seat: \"seat:<name>\" for a seat, \"operator\" for the operator's surfaces."},
		{Name: "tool", Kind: tools.KindString, MaxBytes: 64, NonEmpty: true, Desc: "Only calls of this tool (refusals by code and spend are not split by tool, and are left out)."},
		{Name: "node", Kind: tools.KindString, MaxBytes: 63, NonEmpty: true, Desc: "Only what this data node served (its node.name)."},
	}
	tool := tools.NewTool(NameUsageReport,
		"The fleet's usage by company day, seat and tool (operator only): tool calls by outcome, refusals by code, turns seen, a duration histogram and the spend callers reported, from every data node's days, with coverage (which node-days are missing: a gap, not a fault). A replication answer, so its level is not yours to choose: stale, or consistent_prefix with a note when this node cannot measure its lag.",
		params, tools.ReadAnnotations("Usage report"), tools.OutputSchema[usage.Report]())
	return tool, d.ReadHandler(NameUsageReport, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		return svc.Usage(ctx, usage.Query{From: a.Str("from"), To: a.Str("to"), Seat: a.Str("seat"), Tool: a.Str("tool"), Node: a.Str("node")})
	})
}
