package tools_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

type probeAnswer struct {
	Outcome string `json:"outcome,omitempty"`
	Rows    int    `json:"rows,omitempty"`
}

// servedCatalogue is one read tool answering what answer says, and an
// observer keeping every call it sees.
func servedCatalogue(answer func() (any, error), seen *[]tools.Served) tools.Catalogue {
	return tools.Catalogue{{Name: "x", Entries: []tools.Entry{{Read: true, Build: func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) {
		tool := tools.NewTool("probe", "A probe.", nil, tools.ReadAnnotations("Probe"), tools.OutputSchema[probeAnswer]())
		return tool, d.ReadHandler("probe", nil, nil, func(context.Context, tools.Args) (any, error) { return answer() })
	}}}, Observe: func(_ context.Context, c tools.Served) { *seen = append(*seen, c) }}}
}

func callProbe(t *testing.T, c tools.Catalogue, s tools.Surface, ctx context.Context, meta map[string]any) *mcp.CallToolResult {
	t.Helper()
	set := c.Set(tools.Deps{Surface: s})
	if len(set) != 1 {
		t.Fatalf("%d tools", len(set))
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "probe"
	req.Params.Arguments = map[string]any{}
	if meta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	res, err := set[0].Handler(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestServedCallsAreObserved: every call a surface answers reaches the
// catalogue's observers with its tool, seat and unit (seat surface
// only), outcome (a write's, answered, refused with its code) and the
// spend its _meta reported, in micro-dollars; a malformed spend report
// refuses the call invalid_argument without running it.
func TestServedCallsAreObserved(t *testing.T) {
	var seen []tools.Served
	ran := 0
	answer := func() (any, error) { ran++; return probeAnswer{Outcome: "pending"}, nil }
	c := servedCatalogue(answer, &seen)
	ctx := tools.WithTurn(context.Background(), tools.Turn{Seat: "ana", Unit: "u1"})
	callProbe(t, c, tools.Seat, ctx, map[string]any{tools.MetaSpend: map[string]any{"model": "m1", "input_tokens": 10.0, "output_tokens": 2.0, "cost_usd": 0.0123}})
	if len(seen) != 1 || seen[0].Seat != "ana" || seen[0].Unit != "u1" || seen[0].Outcome != "pending" || seen[0].Tool != "probe" ||
		len(seen[0].Spend) != 1 || seen[0].Spend[0] != (tools.Spend{Model: "m1", InputTokens: 10, OutputTokens: 2, CostMicros: 12300}) {
		t.Fatalf("seat call seen as %+v", seen)
	}
	callProbe(t, c, tools.Operator, ctx, nil)
	if s := seen[1]; s.Seat != "" || s.Outcome != "pending" || s.Surface != tools.Operator {
		t.Fatalf("operator call seen as %+v", s)
	}
	for _, bad := range []any{"cheap", []any{map[string]any{"model": ""}}, map[string]any{"model": "m", "input_tokens": -1.0},
		map[string]any{"model": "m", "input_tokens": 1.5}, map[string]any{"model": "m", "price": 1.0}, map[string]any{"cost_usd": 1.0}} {
		before := ran
		res := callProbe(t, c, tools.Seat, ctx, map[string]any{tools.MetaSpend: bad})
		obj, ok := tools.RefusalOf(res)
		if !ok || obj["refused"] != string(engine.CodeInvalidArgument) || ran != before {
			t.Fatalf("spend %v: %+v (ran %d times)", bad, obj, ran-before)
		}
		if last := seen[len(seen)-1]; last.Outcome != "refused" || last.Code != string(engine.CodeInvalidArgument) {
			t.Fatalf("a refused call seen as %+v", last)
		}
	}
	c = servedCatalogue(func() (any, error) { return nil, engine.Refuse(engine.CodeNotFound, "no such thing.") }, &seen)
	callProbe(t, c, tools.Operator, context.Background(), nil)
	if last := seen[len(seen)-1]; last.Outcome != "refused" || last.Code != "not_found" {
		t.Fatalf("a refusal seen as %+v", last)
	}
	c = servedCatalogue(func() (any, error) { return probeAnswer{Rows: 1}, nil }, &seen)
	callProbe(t, c, tools.Operator, context.Background(), nil)
	if last := seen[len(seen)-1]; last.Outcome != "answered" {
		t.Fatalf("a read seen as %+v", last)
	}
}
