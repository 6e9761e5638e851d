package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// CallObserver counts tool calls: the tool, the surface, how long the
// call took and the refusal code it answered ("" when it answered): the
// node's metrics registry, as Deps.Calls.
type CallObserver interface {
	ToolCall(tool, surface string, took time.Duration, code string)
}

// observed wraps h so d's CallObserver, where it has one, sees each call.
func (d Deps) observed(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	obs := d.Calls
	if obs == nil {
		return h
	}
	surface := string(d.Surface)
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t0 := time.Now()
		res, err := h(ctx, req)
		obs.ToolCall(name, surface, time.Since(t0), refusalCode(res, err))
		return res, err
	}
}

// refusalCode is the code a tool result refused with: every refusal is a
// result with isError whose text is the refusal object.
func refusalCode(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "internal"
	}
	if res == nil || !res.IsError || len(res.Content) == 0 {
		return ""
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "internal"
	}
	var obj struct {
		Refused string `json:"refused"`
	}
	if json.Unmarshal([]byte(tc.Text), &obj) != nil || obj.Refused == "" {
		return "internal"
	}
	return obj.Refused
}

// actor names who asks on this surface, for the record's "by" and the
// audit trail: a seat by its name, every other surface as the operator
// (its token, or the assistant over stdio on the operator's machine).
func (d Deps) actor(ctx context.Context) string {
	if d.Surface == Seat {
		if t, ok := TurnFrom(ctx); ok && t.Seat != "" {
			return "seat:" + t.Seat
		}
		return "seat"
	}
	return "operator"
}
