// Package toolstest calls tools as their tests do: a handler run with
// arguments as JSON text off the wire, and its result checked the way an
// official MCP SDK client checks it (a success's structured content
// against the tool's output schema, its text the same object; a refusal
// with no structured content, its one text the refusal object). It is
// for tests only.
package toolstest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/internal/mcptest"
	"github.com/crewlet/crewlet/tools"
)

// ByName are tools by name.
func ByName(ts []server.ServerTool) map[string]server.ServerTool {
	out := map[string]server.ServerTool{}
	for _, st := range ts {
		out[st.Tool.Name] = st
	}
	return out
}

// Call runs a tool's handler with arguments given as JSON text, the way
// they arrive off the wire, and checks its result (CheckResult).
func Call(t *testing.T, ts map[string]server.ServerTool, name, argsJSON string) *mcp.CallToolResult {
	t.Helper()
	return CallContext(t, context.Background(), ts, name, argsJSON)
}

// CallContext is Call with a context (a seat's turn).
func CallContext(t *testing.T, ctx context.Context, ts map[string]server.ServerTool, name, argsJSON string) *mcp.CallToolResult {
	t.Helper()
	st, ok := ts[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	var req mcp.CallToolRequest
	body := `{"name":` + MustJSON(name) + `,"arguments":` + argsJSON + `}`
	if err := json.Unmarshal([]byte(body), &req.Params); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	res, err := st.Handler(ctx, req)
	if err != nil {
		t.Fatalf("%s returned a Go error (would be a JSON-RPC error): %v", name, err)
	}
	CheckResult(t, st.Tool, res)
	return res
}

// CheckResult checks a result as an SDK client would see it: a success's
// structured content validates against the tool's output schema, and
// either kind reads as Structured says.
func CheckResult(t *testing.T, tool mcp.Tool, res *mcp.CallToolResult) {
	t.Helper()
	if !res.IsError {
		if err := mcptest.CheckStructured(tool, res.StructuredContent); err != nil {
			t.Fatal(err)
		}
	}
	Structured(t, res)
}

// MustJSON is v as JSON.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Structured is a result's JSON object, checked against the wire form
// (tools' result.go): a success's structured content, whose text is the
// same object as JSON; a refusal's object, read with RefusalOf from its
// text, with no structured content beside it.
func Structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		if res.StructuredContent != nil {
			t.Fatalf("an error result carries structured content (the TypeScript SDK 1.x would validate it): %s", MustJSON(res.StructuredContent))
		}
		m, ok := tools.RefusalOf(res)
		if !ok {
			t.Fatalf("an error result whose text is no refusal object: %q", Text(res))
		}
		if msg, _ := m["message"].(string); msg == "" {
			t.Fatalf("a refusal without a message: %v", m)
		}
		if len(res.Content) != 1 {
			t.Fatalf("a refusal has %d contents, want its one text", len(res.Content))
		}
		return m
	}
	var m, fromText map[string]any
	if err := json.Unmarshal([]byte(MustJSON(res.StructuredContent)), &m); err != nil {
		t.Fatalf("structured content is not a JSON object: %v", err)
	}
	if err := json.Unmarshal([]byte(Text(res)), &fromText); err != nil {
		t.Fatalf("the text of a success is not its JSON object: %v: %q", err, Text(res))
	}
	if !reflect.DeepEqual(m, fromText) {
		t.Fatalf("the text is not the structured content:\n text %s\n structured %s", Text(res), MustJSON(res.StructuredContent))
	}
	return m
}

// Message is what a result says to do: a refusal's message, or a write
// answer's message field.
func Message(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	msg, _ := Structured(t, res)["message"].(string)
	return msg
}

// Text is a result's first text content.
func Text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
		return tc.Text
	}
	return ""
}
