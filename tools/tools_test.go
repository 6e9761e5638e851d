package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/internal/mcptest"
)

func operatorTools(t *testing.T, f *fakeTracker, logger *slog.Logger) map[string]server.ServerTool {
	t.Helper()
	out := map[string]server.ServerTool{}
	for _, st := range Set(Deps{Services: []any{f}, Logger: logger, Surface: Operator}) {
		out[st.Tool.Name] = st
	}
	return out
}

// call runs a tool's handler with arguments given as JSON text, the way
// they arrive off the wire.
func call(t *testing.T, tools map[string]server.ServerTool, name, argsJSON string) *mcp.CallToolResult {
	t.Helper()
	st, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	var req mcp.CallToolRequest
	body := `{"name":` + mustJSON(name) + `,"arguments":` + argsJSON + `}`
	if err := json.Unmarshal([]byte(body), &req.Params); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	res, err := st.Handler(context.Background(), req)
	if err != nil {
		t.Fatalf("%s returned a Go error (would be a JSON-RPC error): %v", name, err)
	}
	checkResult(t, st.Tool, res)
	return res
}

// checkResult checks a result as an SDK client would see it: a success's
// structured content validates against the tool's output schema, and
// either kind reads as structured says.
func checkResult(t *testing.T, tool mcp.Tool, res *mcp.CallToolResult) {
	t.Helper()
	if !res.IsError {
		if err := mcptest.CheckStructured(tool, res.StructuredContent); err != nil {
			t.Fatal(err)
		}
	}
	structured(t, res)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// structured is a result's JSON object, checked against the wire form
// (result.go): a success's structured content, whose text is the same
// object as JSON; a refusal's object, read with RefusalOf from its text,
// with no structured content beside it.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		if res.StructuredContent != nil {
			t.Fatalf("an error result carries structured content (the TypeScript SDK 1.x would validate it): %s", mustJSON(res.StructuredContent))
		}
		m, ok := RefusalOf(res)
		if !ok {
			t.Fatalf("an error result whose text is no refusal object: %q", text(res))
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
	if err := json.Unmarshal([]byte(mustJSON(res.StructuredContent)), &m); err != nil {
		t.Fatalf("structured content is not a JSON object: %v", err)
	}
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("the text of a success is not its JSON object: %v: %q", err, text(res))
	}
	if !reflect.DeepEqual(m, fromText) {
		t.Fatalf("the text is not the structured content:\n text %s\n structured %s", text(res), mustJSON(res.StructuredContent))
	}
	return m
}

// message is what a result says to do: a refusal's message, or a write
// answer's message field.
func message(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	msg, _ := structured(t, res)["message"].(string)
	return msg
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
		return tc.Text
	}
	return ""
}

func TestEveryToolHasAllFourAnnotationsAndClosedSchema(t *testing.T) {
	want := map[string][4]bool{ // readOnly, destructive, idempotent, openWorld
		NameListProjects:   {true, false, true, false},
		NameGetWorkItem:    {true, false, true, false},
		NameListWorkItems:  {true, false, true, false},
		NameCreateProject:  {false, false, true, false},
		NameCreateWorkItem: {false, false, false, false},
		NameUpdateWorkItem: {false, false, true, false},

		NameSearchWorkItems:   {true, false, true, false},
		NameCommentOnWorkItem: {false, false, false, false},
		NameMoveWorkItem:      {false, false, true, false},
		NameMergeWorkItems:    {false, false, true, false},
		NameTrashWorkItem:     {false, true, true, false},
		NameRestoreWorkItem:   {false, false, true, false},
		NamePurgeWorkItem:     {false, true, true, false},
		NameListTags:          {true, false, true, false},
	}
	tools := operatorTools(t, &fakeTracker{}, nil)
	if len(tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(tools), len(want))
	}
	for name, w := range want {
		st, ok := tools[name]
		if !ok {
			t.Fatalf("missing tool %s", name)
		}
		a := st.Tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: an annotation is unset: %+v", name, a)
		}
		got := [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}
		if got != w {
			t.Errorf("%s: annotations %v, want %v", name, got, w)
		}
		if string(st.Tool.RawOutputSchema) != `{"type":"object"}` {
			t.Errorf("%s: no output schema", name)
		}
		_, hasOpID := st.Tool.InputSchema.Properties[argOpID]
		if hasOpID == *a.ReadOnlyHint {
			t.Errorf("%s: op_id present=%v on a readOnly=%v tool", name, hasOpID, *a.ReadOnlyHint)
		}
		if !*a.ReadOnlyHint && !strings.Contains(st.Tool.Description, "unknown") {
			t.Errorf("%s: write description does not say what to do with outcomes", name)
		}
		if _, hasLevel := st.Tool.InputSchema.Properties["level"]; hasLevel {
			t.Errorf("%s: takes a level argument", name)
		}
	}
}

// TestToolSnaps compares every tool's definition, on both surfaces, with
// its snapshot in __toolsnaps__ (the seat's under __toolsnaps__/seat);
// UPDATE_TOOLSNAPS=true rewrites them. A missing snapshot fails, and so
// does a snapshot no tool has any more.
func TestToolSnaps(t *testing.T) {
	update := os.Getenv("UPDATE_TOOLSNAPS") == "true"
	for _, surface := range []struct {
		deps Deps
		dir  string
	}{{Deps{Surface: Operator, Services: []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil)}}, "__toolsnaps__"}, {Deps{Surface: Seat, Services: []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil)}}, filepath.Join("__toolsnaps__", "seat")}} {
		seen := map[string]bool{}
		for _, st := range Set(surface.deps) {
			path := filepath.Join(surface.dir, st.Tool.Name+".snap")
			seen[path] = true
			t.Run(string(surface.deps.Surface)+"/"+st.Tool.Name, func(t *testing.T) {
				raw, err := json.Marshal(st.Tool)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := json.Indent(&got, raw, "", "  "); err != nil {
					t.Fatal(err)
				}
				got.WriteByte('\n')
				if update {
					if err := os.MkdirAll(surface.dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("no snapshot for %s (%v): run UPDATE_TOOLSNAPS=true go test ./tools/ and review the diff", st.Tool.Name, err)
				}
				if !bytes.Equal(normalize(want), normalize(got.Bytes())) {
					t.Fatalf("tool %s differs from %s; if the change is intended, run UPDATE_TOOLSNAPS=true go test ./tools/\ngot:\n%s", st.Tool.Name, path, got.String())
				}
			})
		}
		files, err := filepath.Glob(filepath.Join(surface.dir, "*.snap"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if seen[f] {
				continue
			}
			if update {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("snapshot %s belongs to no %s tool: delete it (UPDATE_TOOLSNAPS=true does)", f, surface.deps.Surface)
		}
	}
}

// normalize re-encodes JSON so formatting differences do not count.
func normalize(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

func TestBadArgumentsAreInvalidArgumentResultsBeforeTheService(t *testing.T) {
	long := strings.Repeat("x", 10<<10)
	cases := []struct {
		tool, args, mention string
	}{
		{NameCreateWorkItem, `{"project":"ENG","title":""}`, `"title"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"   "}`, `"title"`},
		{NameCreateWorkItem, `{"project":"ENG","title":` + mustJSON(long) + `}`, `"title"`},
		{NameCreateWorkItem, `{"project":"ENG","title":5}`, `"title" must be a string, not a number`},
		{NameCreateWorkItem, `{"project":"ENG"}`, `Missing required argument "title"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","colour":"red"}`, `Unknown argument "colour"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","status":"wip"}`, `"status"`},
		{NameCreateWorkItem, `{"project":"eng","title":"x"}`, `"project"`},
		{NameCreateWorkItem, `["ENG","x"]`, `JSON object`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","op_id":7}`, `"op_id"`},
		{NameGetWorkItem, `{"key":"eng-x"}`, `not a work item key`},
		{NameGetWorkItem, `{"key":"ENG-0"}`, `not a work item key`},
		{NameGetWorkItem, `{"key":"ENG"}`, `not a work item key`},
		{NameGetWorkItem, `{}`, `Missing required argument "key"`},
		{NameGetWorkItem, `{"key":"ENG-1","level":"stale"}`, `Unknown argument "level"`},
		{NameListProjects, `{"x":1}`, `Unknown argument "x"`},
		{NameListProjects, `{"include_archived":"yes"}`, `"include_archived" must be a boolean, not a string`},
		{NameListWorkItems, `{"limit":0}`, `"limit"`},
		{NameListWorkItems, `{"limit":201}`, `"limit"`},
		{NameListWorkItems, `{"limit":2.5}`, `"limit"`},
		{NameListWorkItems, `{"limit":"5"}`, `"limit" must be an integer, not a string`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":-1,"title":"x"}`, `"if_match"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3}`, `Nothing to change`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"title":""}`, `"title" must not be empty`},
		{NameCreateProject, `{"key":"ENG","name":` + mustJSON(strings.Repeat("n", 201)) + `}`, `"name"`},
		{NameCreateProject, `{"key":"E-1","name":"x"}`, `not a project key`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			res := call(t, operatorTools(t, f, nil), c.tool, c.args)
			if !res.IsError {
				t.Fatalf("not an error result: %s", text(res))
			}
			m := structured(t, res)
			if m["refused"] != string(engine.CodeInvalidArgument) {
				t.Fatalf("refused = %v, want invalid_argument (%v)", m["refused"], m)
			}
			msg, _ := m["message"].(string)
			if !strings.Contains(msg, c.mention) {
				t.Errorf("message %q does not mention %s", msg, c.mention)
			}
			if len(f.calls) != 0 {
				t.Errorf("the service was called: %v", f.calls)
			}
		})
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func TestArgumentsReachTheService(t *testing.T) {
	f := &fakeTracker{}
	tools := operatorTools(t, f, nil)

	res := call(t, tools, NameCreateWorkItem, `{"project":"ENG","title":"Fix it","assignee":"ana","op_id":"01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.create-ENG"}`)
	if res.IsError {
		t.Fatalf("error: %s", text(res))
	}
	if f.lastW.OpID != "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.create-ENG" {
		t.Errorf("op_id not passed: %+v", f.lastW)
	}
	if !reflect.DeepEqual(f.lastNew, tracker.NewWorkItem{Project: "ENG", Title: "Fix it", Assignee: "ana"}) {
		t.Errorf("new item %+v", f.lastNew)
	}
	m := structured(t, res)
	if m["outcome"] != "applied" || m["position"] != "CREWLET_TRACKER_LOG@1:42" || m["op_id"] == "" {
		t.Errorf("answer %v", m)
	}
	if item, _ := m["item"].(map[string]any); item["key"] != "ENG-1" || item["version"] != float64(42) {
		t.Errorf("item %v", m["item"])
	}

	// if_match above 2^53 survives: arguments are read from the wire bytes.
	res = call(t, tools, NameUpdateWorkItem, `{"key":"ENG-1","if_match":9007199254740993,"status":"done","description":""}`)
	if res.IsError {
		t.Fatalf("error: %s", text(res))
	}
	if f.ifMatch != 9007199254740993 {
		t.Errorf("if_match = %d", f.ifMatch)
	}
	if f.lastP.Status == nil || *f.lastP.Status != "done" || f.lastP.Description == nil || *f.lastP.Description != "" || f.lastP.Title != nil || f.lastP.Assignee != nil {
		t.Errorf("patch %+v", f.lastP)
	}

	res = call(t, tools, NameListWorkItems, `{"project":"ENG","status":"open","limit":5,"cursor":"c1"}`)
	if res.IsError {
		t.Fatalf("error: %s", text(res))
	}
	if f.lastR.Level != engine.Linearizable {
		t.Errorf("read level %q", f.lastR.Level)
	}
	if f.lastF != (tracker.ListFilter{Project: "ENG", Status: "open", Limit: 5, Cursor: "c1"}) {
		t.Errorf("filter %+v", f.lastF)
	}
	m = structured(t, res)
	if items, ok := m["items"].([]any); !ok || len(items) != 0 {
		t.Errorf("items = %v, want []", m["items"])
	}
	if m["level"] != "linearizable" || m["next_cursor"] != "c2" {
		t.Errorf("answer %v", m)
	}
	st, _ := m["seen_through"].(map[string]any)
	if st["stream"] != engine.StreamTracker || st["seq"] != float64(42) {
		t.Errorf("seen_through %v", m["seen_through"])
	}

	// Absent and null arguments are both "not given".
	res = call(t, tools, NameListWorkItems, `{"project":null}`)
	if res.IsError || f.lastF.Limit != tracker.DefaultListLimit || f.lastF.Project != "" {
		t.Errorf("defaults: %+v %s", f.lastF, text(res))
	}
	res = call(t, tools, NameListProjects, `null`)
	if res.IsError {
		t.Errorf("list_projects with null arguments: %s", text(res))
	}
}

func TestServiceRefusalIsPassedThrough(t *testing.T) {
	f := &fakeTracker{}
	res := call(t, operatorTools(t, f, nil), NameCreateWorkItem, `{"project":"NOPE","title":"x"}`)
	m := structured(t, res)
	if !res.IsError || m["refused"] != "not_found" || !strings.Contains(m["message"].(string), "NOPE") {
		t.Fatalf("got %v", m)
	}

	f = &fakeTracker{fail: engine.Refuse(engine.CodeNoQuorum, "The barrier did not commit.")}
	res = call(t, operatorTools(t, f, nil), NameGetWorkItem, `{"key":"ENG-1"}`)
	m = structured(t, res)
	if m["refused"] != "no_quorum" || m["retry_after_seconds"] != float64(4) {
		t.Fatalf("got %v", m)
	}
}

func TestInternalErrorIsLoggedNotLeaked(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	f := &fakeTracker{fail: errSecret}
	res := call(t, operatorTools(t, f, logger), NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"title":"x","op_id":"op-1"}`)
	m := structured(t, res)
	if !res.IsError || m["refused"] != "internal" {
		t.Fatalf("got %v", m)
	}
	if strings.Contains(mustJSON(res), "secret") {
		t.Errorf("internal detail leaked: %s", mustJSON(res))
	}
	if !strings.Contains(logs.String(), "secret") || !strings.Contains(logs.String(), `"op_id":"op-1"`) || !strings.Contains(logs.String(), `"component":"mcp"`) {
		t.Errorf("log line lacks the detail: %s", logs.String())
	}
}

// TestOutcomeMessages: a pending or unknown answer says what to do in
// its message field even where the service gave no sentence, so a host
// passing only the text (the answer's JSON) to the model loses nothing.
func TestOutcomeMessages(t *testing.T) {
	f := &fakeTracker{outcome: engine.Pending}
	res := call(t, operatorTools(t, f, nil), NameCreateProject, `{"key":"ENG","name":"Engineering"}`)
	if msg := message(t, res); res.IsError || !strings.Contains(msg, "Do not retry") || !strings.Contains(msg, "3 records behind") {
		t.Errorf("pending message %q", msg)
	}
	if m := structured(t, res); m["outcome"] != "pending" || m["lag"] == nil || m["position"] != "CREWLET_TRACKER_LOG@1:42" {
		t.Errorf("pending answer %v", m)
	}
	f = &fakeTracker{outcome: engine.Unknown}
	res = call(t, operatorTools(t, f, nil), NameCreateProject, `{"key":"ENG","name":"Engineering","op_id":"01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f"}`)
	if msg := message(t, res); res.IsError || !strings.Contains(msg, "Retry with op_id 01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f") {
		t.Errorf("unknown message %q", msg)
	}
	if m := structured(t, res); m["outcome"] != "unknown" || m["position"] != nil {
		t.Errorf("unknown answer %v", m)
	}
	// A seat brings no op_id: it is told to repeat the call.
	f = &fakeTracker{outcome: engine.Unknown}
	res = seatCall(t, seatTools(t, f)[NameCreateProject], `{"key":"ENG","name":"Engineering"}`)
	if msg := message(t, res); !strings.Contains(msg, "Repeat exactly the same call") || strings.Contains(msg, "op_id") {
		t.Errorf("seat unknown message %q", msg)
	}
	// The service's own sentence is kept.
	f = &fakeTracker{outcome: engine.Pending, message: "The service's own words."}
	res = call(t, operatorTools(t, f, nil), NameCreateProject, `{"key":"ENG","name":"Engineering"}`)
	if msg := message(t, res); msg != "The service's own words." {
		t.Errorf("service message replaced: %q", msg)
	}
}

func TestRetryableWriteRefusalCarriesOpID(t *testing.T) {
	f := &fakeTracker{fail: engine.Refuse(engine.CodeConflict, "Other writes kept landing first. Retry with the same op_id.")}
	res := call(t, operatorTools(t, f, nil), NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"title":"x","op_id":"op-7"}`)
	m := structured(t, res)
	if m["refused"] != "conflict" || m["op_id"] != "op-7" || m["retry_after_seconds"] != float64(1) {
		t.Fatalf("got %v", m)
	}
	f = &fakeTracker{fail: engine.Refuse(engine.CodeStale, "changed")}
	res = call(t, operatorTools(t, f, nil), NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"title":"x","op_id":"op-7"}`)
	if m := structured(t, res); m["refused"] != "stale" || m["op_id"] != nil {
		t.Fatalf("got %v", m)
	}
}

// TestMaintenanceSaysWhatAnMCPCallerCanDo: the engine's maintenance
// refusal of a linearizable read points at other read levels, which no
// MCP caller can choose; the tool result says instead that writes and
// linearizable reads wait for normal mode, and keeps the code.
func TestMaintenanceSaysWhatAnMCPCallerCanDo(t *testing.T) {
	engineSays := "this node runs in a capacity window (maintenance or seal) that publishes nothing, and a linearizable read proves the log's end by appending a barrier to it. Ask again once the fleet is back in normal mode, or read at stale or consistent_prefix, which append nothing."
	for _, name := range []string{NameGetWorkItem, NameUpdateWorkItem} {
		f := &fakeTracker{fail: engine.Refuse(engine.CodeMaintenance, "%s", engineSays)}
		args := `{"key":"ENG-1"}`
		if name == NameUpdateWorkItem {
			args = `{"key":"ENG-1","if_match":3,"title":"x"}`
		}
		res := call(t, operatorTools(t, f, nil), name, args)
		m, isRefusal := RefusalOf(res)
		msg, _ := m["message"].(string)
		if !res.IsError || !isRefusal || m["refused"] != "maintenance" || msg == "" {
			t.Fatalf("%s: %v | %s", name, m, text(res))
		}
		for _, level := range []string{"stale", "consistent_prefix", "read_level"} {
			if strings.Contains(msg, level) {
				t.Errorf("%s: the message names %s, a level an MCP caller cannot choose: %s", name, level, msg)
			}
		}
		for _, want := range []string{"capacity window", "writes and linearizable reads", "normal mode", "try again later"} {
			if !strings.Contains(strings.ToLower(msg), want) {
				t.Errorf("%s: the message does not say %q: %s", name, want, msg)
			}
		}
	}
}
