package tools

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
)

// maxMessage bounds a refusal's message in these tests: a sentence and a
// capped quote of the input, never the input itself.
const maxMessage = 1 << 10

// TestTextArgumentsAreCheckedCentrally: every text argument, list items
// and edge keys included, is refused invalid_argument naming it when it
// holds a NUL byte, invalid UTF-8 (raw bytes off the wire, or a lone
// surrogate escape) or a control character (line breaks and tabs pass in
// long text only), before the service is called; what is plain text
// passes.
func TestTextArgumentsAreCheckedCentrally(t *testing.T) {
	refused := []struct {
		tool, args, field, mention string
	}{
		{NameSearchWorkItems, `{"query":"login\u0000page"}`, `"query"`, "NUL byte"},
		{NameSearchWorkItems, `{"query":"login` + "\xff" + `page"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\ud800page"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\udc00"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\ud800\u0041"}`, `"query"`, "not valid UTF-8"},
		{NameCreateWorkItem, `{"project":"ENG","title":"two\nlines"}`, `"title"`, "U+000A"},
		{NameCreateWorkItem, `{"project":"ENG","title":"tab\there"}`, `"title"`, "U+0009"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","description":"bell\u0007"}`, `"description"`, "U+0007"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","description":"nul\u0000"}`, `"description"`, "NUL byte"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","assignee":"del\u007f"}`, `"assignee"`, "U+007F"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":["ok","c1\u0085"]}`, `"tags[1]"`, "U+0085"},
		{NameCreateWorkItem, `{"project":"ENG\u0000","title":"x"}`, `"project"`, "NUL byte"},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":1,"add_relations":[{"kind":"relates_to","key":"ENG-2\u0000"}]}`, `"add_relations[0].key"`, "NUL byte"},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"esc\u001b[31m"}`, `"body"`, "U+001B"},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"x","author":"a\nb"}`, `"author"`, "U+000A"},
		{NameListWorkItems, `{"cursor":"c\r"}`, `"cursor"`, "U+000D"},
		{NameCreateProject, `{"key":"ENG","name":"x","op_id":"op\u0000"}`, `"op_id"`, "NUL byte"},
	}
	for _, c := range refused {
		t.Run("refused "+c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			res := call(t, operatorTools(t, f, nil), c.tool, c.args)
			m := structured(t, res)
			msg, _ := m["message"].(string)
			if !res.IsError || m["refused"] != string(engine.CodeInvalidArgument) || !strings.Contains(msg, c.field) || !strings.Contains(msg, c.mention) {
				t.Fatalf("want invalid_argument naming %s and %s, got %v", c.field, c.mention, m)
			}
			if len(f.calls) != 0 {
				t.Errorf("the service was called: %v", f.calls)
			}
		})
	}
	passed := []struct{ tool, args string }{
		{NameCreateWorkItem, `{"project":"ENG","title":"Ünïcødé — 日本 😀 \ud83d\ude00","description":"line one\r\nline two\n\tindented"}`},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"a\nb\tc"}`},
		{NameSearchWorkItems, `{"query":"a \\u0000 escaped backslash is plain text"}`},
		{NameCreateWorkItem, `{"project":"ENG","title":"replacement \ufffd is a character"}`},
	}
	for _, c := range passed {
		t.Run("passed "+c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			if res := call(t, operatorTools(t, f, nil), c.tool, c.args); res.IsError {
				t.Fatalf("refused: %s", text(res))
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"ENG-1":                       `"ENG-1"`,
		strings.Repeat("a", 64):       `"` + strings.Repeat("a", 64) + `"`,
		strings.Repeat("a", 65):       `"` + strings.Repeat("a", 64) + `"…`,
		strings.Repeat("é", 40):       `"` + strings.Repeat("é", 32) + `"…`,  // 80 bytes: cut at 64
		"a" + strings.Repeat("é", 40): `"a` + strings.Repeat("é", 31) + `"…`, // never half a character
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%.20q…) = %s, want %s", in, got, want)
		}
	}
}

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
	d := Deps{Surface: Operator, Services: []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil)}}
	tools := map[string]server.ServerTool{}
	for _, st := range Set(d) {
		tools[st.Tool.Name] = st
	}
	checked := 0
	for _, st := range tools {
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
				r, ok := RefusalOf(call(t, tools, st.Tool.Name, mustJSON(in)))
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

// The text checks are the parser's, not a side effect of a tool: a
// param declared long takes line breaks, one that is not refuses them.
func TestCheckTextLongAndShort(t *testing.T) {
	short := param{name: "s", kind: kindString, maxBytes: 10}
	long := param{name: "l", kind: kindString, maxBytes: 10, long: true}
	if r := checkText(short, []byte(`"a\nb"`), "a\nb"); r == nil {
		t.Error("a line break passed in one-line text")
	}
	if r := checkText(long, []byte(`"a\nb"`), "a\nb"); r != nil {
		t.Errorf("a line break refused in long text: %v", r)
	}
	if r := checkText(long, []byte(`"12345678901"`), "12345678901"); r == nil || !strings.Contains(r.Message, "at most 10") {
		t.Errorf("11 bytes passed a bound of 10: %v", r)
	}
	var _ = mcp.CallToolRequest{}
}
