package trackertools

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/toolstest"
)

func operatorTools(t *testing.T, f *fakeTracker, logger *slog.Logger) map[string]server.ServerTool {
	t.Helper()
	return toolstest.ByName(tools.Catalogue{Toolset(f)}.Set(tools.Deps{Logger: logger, Surface: tools.Operator}))
}

// The helpers every test here calls tools with (toolstest's).
var (
	call        = toolstest.Call
	checkResult = toolstest.CheckResult
	mustJSON    = toolstest.MustJSON
	structured  = toolstest.Structured
	message     = toolstest.Message
	text        = toolstest.Text
)

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
	ts := operatorTools(t, &fakeTracker{}, nil)
	if len(ts) != len(want) {
		t.Fatalf("got %d tools, want %d", len(ts), len(want))
	}
	for name, w := range want {
		st, ok := ts[name]
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
		_, hasOpID := st.Tool.InputSchema.Properties[tools.ArgOpID]
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
	ts := operatorTools(t, f, nil)

	res := call(t, ts, NameCreateWorkItem, `{"project":"ENG","title":"Fix it","assignee":"ana","op_id":"01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.create-ENG"}`)
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
	res = call(t, ts, NameUpdateWorkItem, `{"key":"ENG-1","if_match":9007199254740993,"status":"done","description":""}`)
	if res.IsError {
		t.Fatalf("error: %s", text(res))
	}
	if f.ifMatch != 9007199254740993 {
		t.Errorf("if_match = %d", f.ifMatch)
	}
	if f.lastP.Status == nil || *f.lastP.Status != "done" || f.lastP.Description == nil || *f.lastP.Description != "" || f.lastP.Title != nil || f.lastP.Assignee != nil {
		t.Errorf("patch %+v", f.lastP)
	}

	res = call(t, ts, NameListWorkItems, `{"project":"ENG","status":"open","limit":5,"cursor":"c1"}`)
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
	res = call(t, ts, NameListWorkItems, `{"project":null}`)
	if res.IsError || f.lastF.Limit != tracker.DefaultListLimit || f.lastF.Project != "" {
		t.Errorf("defaults: %+v %s", f.lastF, text(res))
	}
	res = call(t, ts, NameListProjects, `null`)
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
		m, isRefusal := tools.RefusalOf(res)
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
