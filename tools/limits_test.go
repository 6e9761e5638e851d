package tools_test

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/toolstest"
)

// TestEveryLimitIsRefused: on every surface, every string argument of
// every tool (list items and edge keys included) has a limit the parser
// enforces, though the schema no longer states it (schemaOptions): a
// value over it is refused invalid_argument with a sentence naming the
// argument and the limit, before any service is reached (the services
// here are nil). Each argument gets 2 KiB first and, if that is within its
// limit, one byte over the largest limit the engine has (a page body's).
// The operator's toolset is every tool's parameters; the seat's share
// them.
func TestEveryLimitIsRefused(t *testing.T) {
	sizes := []int{2 << 10, kb.MaxBodyBytes + 1}
	d := surface{tools.Operator, catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil))}
	ts := map[string]server.ServerTool{}
	for _, st := range d.set() {
		ts[st.Tool.Name] = st
	}
	checked := 0
	for _, st := range ts {
		for name, prop := range st.Tool.InputSchema.Properties {
			m := prop.(map[string]any)
			if m["enum"] != nil || (m["type"] != "string" && m["type"] != "array") {
				continue
			}
			if items, _ := m["items"].(map[string]any); m["type"] == "array" && items["enum"] != nil {
				continue
			}
			checked++
			var msg string
			for _, n := range sizes {
				in := requiredFilled(st.Tool)
				in[name] = overLimit(m, strings.Repeat("a", n))
				r, ok := tools.RefusalOf(toolstest.Call(t, ts, st.Tool.Name, toolstest.MustJSON(in)))
				msg, _ = r["message"].(string)
				if ok && r["refused"] == string(engine.CodeInvalidArgument) && strings.Contains(msg, name) && strings.Contains(msg, "at most") {
					break
				}
			}
			if !strings.Contains(msg, "at most") {
				t.Errorf("%s.%s of %d bytes: %q, want invalid_argument naming it and its limit", st.Tool.Name, name, sizes[len(sizes)-1], msg)
			}
		}
	}
	t.Logf("%d string arguments refused over their limits", checked)
	if checked < 40 {
		t.Fatalf("only %d string arguments checked", checked)
	}
}

// overLimit is the argument of schema m holding s: the string, a list of
// it, or a list of one edge (of a kind the schema allows) whose key it is.
func overLimit(m map[string]any, s string) any {
	if m["type"] == "string" {
		return s
	}
	if items, _ := m["items"].(map[string]any); items["type"] == "object" {
		props := items["properties"].(map[string]any)
		if kind, ok := props["kind"].(map[string]any); ok {
			kinds, _ := kind["enum"].([]string)
			return []any{map[string]any{"kind": kinds[0], "key": s}}
		}
		// A list of objects (bulk_create_work_items' items): every
		// string field of one object holds s.
		obj := map[string]any{}
		for name, prop := range props {
			if pm, _ := prop.(map[string]any); pm["type"] == "string" && pm["enum"] == nil {
				obj[name] = s
			}
		}
		return []any{obj}
	}
	return []any{s}
}

// requiredFilled is a tool's required arguments, each a short value of
// its type, so a call gets past the missing-argument check.
func requiredFilled(tool mcp.Tool) map[string]any {
	out := map[string]any{}
	for _, name := range tool.InputSchema.Required {
		switch tool.InputSchema.Properties[name].(map[string]any)["type"] {
		case "integer":
			out[name] = 1
		case "array":
			out[name] = []any{}
		case "object":
			out[name] = map[string]any{}
		case "boolean":
			out[name] = false
		default:
			out[name] = "X"
		}
	}
	return out
}
