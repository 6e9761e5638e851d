package trackertools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/toolstest"
)

func TestNewToolsRefuseBadArgumentsBeforeTheService(t *testing.T) {
	cases := []struct {
		tool, args, mention string
	}{
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":"bug"}`, `"tags" must be an array of strings, not a string`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":[1]}`, `"tags[0]" must be a string, not a number`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":[""]}`, `"tags[0]" must not be empty`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":["` + strings.Repeat("t", 65) + `"]}`, `"tags[0]"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","depends_on":["ENG-1","eng-2"]}`, `"depends_on[1]" is "eng-2", which is not a work item key`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","parent":"ENG"}`, `"parent" is "ENG", which is not a work item key`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":` + mustJSON(make([]string, 51)) + `}`, `"tags" has 51 items`},
		{NameListWorkItems, `{"tag":["a"]}`, `"tag" must be a string`},
		{NameListWorkItems, `{"parent":"ENG-x"}`, `"parent"`},
		{NameListWorkItems, `{"label":"a"}`, `Unknown argument "label"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_tags":{"a":1}}`, `"add_tags" must be an array of strings, not an object`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"tags":["a"]}`, `Unknown argument "tags"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_relations":["ENG-2"]}`, `"add_relations[0]" must be an object`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_relations":[{"kind":"blocks","key":"ENG-2"}]}`, `"add_relations[0].kind" is "blocks"; it must be one of relates_to, duplicates`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_relations":[{"kind":"relates_to"}]}`, `"add_relations[0]" lacks "key"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_relations":[{"kind":"relates_to","key":"ENG-2","why":"x"}]}`, `unknown field "why"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"remove_relations":[{"kind":"relates_to","key":7}]}`, `"remove_relations[0].key" must be a string, not a number`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_dependencies":["ENG-0"]}`, `"add_dependencies[0]"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"parent":"x"}`, `"parent"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_tags":null}`, `Nothing to change`},
		{NameCommentOnWorkItem, `{"key":"ENG-1"}`, `Missing required argument "body"`},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":" "}`, `"body" must not be empty`},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"x","author":5}`, `"author" must be a string`},
		{NameCommentOnWorkItem, `{"key":"ENG","body":"x"}`, `not a work item key`},
		{NameMoveWorkItem, `{"key":"ENG-1"}`, `Missing required argument "project"`},
		{NameMoveWorkItem, `{"key":"ENG-1","project":"ops"}`, `"project" is "ops", which is not a project key`},
		{NameMoveWorkItem, `{"key":"ENG-1","to":"OPS"}`, `Unknown argument "to"`},
		{NameMergeWorkItems, `{"into":"ENG-1"}`, `Missing required argument "duplicates"`},
		{NameMergeWorkItems, `{"into":"ENG-1","duplicates":[]}`, `"duplicates" is empty`},
		{NameMergeWorkItems, `{"into":"ENG-1","duplicates":"ENG-2"}`, `"duplicates" must be an array of strings`},
		{NameMergeWorkItems, `{"into":"ENG-1","duplicates":["ENG-2","x"]}`, `"duplicates[1]"`},
		{NameTrashWorkItem, `{"key":5}`, `"key" must be a string, not a number`},
		{NameTrashWorkItem, `{"key":"ENG-1","recursive":true}`, `Unknown argument "recursive"`},
		{NameRestoreWorkItem, `{}`, `Missing required argument "key"`},
		{NamePurgeWorkItem, `{"key":"ENG-1","op_id":[]}`, `"op_id" must be a string`},
		{NamePurgeWorkItem, `{"key":"ENG-1-2"}`, `not a work item key`},
		{NameSearchWorkItems, `{}`, `Missing required argument "query"`},
		{NameSearchWorkItems, `{"query":"  "}`, `"query" must not be empty`},
		{NameSearchWorkItems, `{"query":"x","limit":101}`, `"limit"`},
		{NameSearchWorkItems, `{"query":"x","project":"e"}`, `not a project key`},
		{NameSearchWorkItems, `{"query":"x","level":"stale"}`, `Unknown argument "level"`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			res := call(t, operatorTools(t, f, nil), c.tool, c.args)
			m := structured(t, res)
			if !res.IsError || m["refused"] != string(engine.CodeInvalidArgument) {
				t.Fatalf("want an invalid_argument result, got %v (%s)", m, text(res))
			}
			if msg, _ := m["message"].(string); !strings.Contains(msg, c.mention) {
				t.Errorf("message %q does not mention %s", msg, c.mention)
			}
			if len(f.calls) != 0 {
				t.Errorf("the service was called: %v", f.calls)
			}
		})
	}
}

func TestNewArgumentsReachTheService(t *testing.T) {
	f := &fakeTracker{}
	ts := operatorTools(t, f, nil)
	ok := func(name, args string) map[string]any {
		t.Helper()
		res := call(t, ts, name, args)
		if res.IsError {
			t.Fatalf("%s: %s", name, text(res))
		}
		return structured(t, res)
	}

	ok(NameCreateWorkItem, `{"project":"ENG","title":"x","tags":["bug","ui"],"parent":"ENG-1","depends_on":["ENG-2"]}`)
	if want := (tracker.NewWorkItem{Project: "ENG", Title: "x", Tags: []string{"bug", "ui"}, Parent: "ENG-1", DependsOn: []string{"ENG-2"}}); !reflect.DeepEqual(f.lastNew, want) {
		t.Errorf("new item %+v, want %+v", f.lastNew, want)
	}

	ok(NameListWorkItems, `{"tag":"bug","parent":"ENG-1"}`)
	if f.lastF.Tag != "bug" || f.lastF.Parent != "ENG-1" {
		t.Errorf("filter %+v", f.lastF)
	}

	ok(NameUpdateWorkItem, `{"key":"ENG-3","if_match":7,"parent":"","add_tags":["a"],"remove_tags":["b"],"add_watchers":["ana"],"remove_watchers":["bo"],
		"add_relations":[{"kind":"duplicates","key":"ENG-4"}],"remove_relations":[{"kind":"relates_to","key":"ENG-5"}],
		"add_dependencies":["ENG-6"],"remove_dependencies":["ENG-7"]}`)
	p := f.lastP
	if p.Parent == nil || *p.Parent != "" || p.Title != nil ||
		!reflect.DeepEqual(p.AddTags, []string{"a"}) || !reflect.DeepEqual(p.RemoveTags, []string{"b"}) ||
		!reflect.DeepEqual(p.AddWatchers, []string{"ana"}) || !reflect.DeepEqual(p.RemoveWatchers, []string{"bo"}) ||
		!reflect.DeepEqual(p.AddEdges, []tracker.Edge{{Kind: "duplicates", Key: "ENG-4"}, {Kind: "depends_on", Key: "ENG-6"}}) ||
		!reflect.DeepEqual(p.RemoveEdges, []tracker.Edge{{Kind: "relates_to", Key: "ENG-5"}, {Kind: "depends_on", Key: "ENG-7"}}) {
		t.Errorf("patch %+v", p)
	}

	ok(NameCommentOnWorkItem, `{"key":"ENG-3","body":"looks good","author":"ana"}`)
	if !reflect.DeepEqual(f.lastG, gestureCall{key: "ENG-3", other: "ana", body: "looks good"}) {
		t.Errorf("comment %+v", f.lastG)
	}
	ok(NameMoveWorkItem, `{"key":"ENG-3","project":"OPS"}`)
	if f.lastG.key != "ENG-3" || f.lastG.other != "OPS" {
		t.Errorf("move %+v", f.lastG)
	}
	ok(NameMergeWorkItems, `{"into":"ENG-3","duplicates":["ENG-4","ENG-5"]}`)
	if f.lastG.key != "ENG-3" || !reflect.DeepEqual(f.lastG.keys, []string{"ENG-4", "ENG-5"}) {
		t.Errorf("merge %+v", f.lastG)
	}
	for _, name := range []string{NameTrashWorkItem, NameRestoreWorkItem, NamePurgeWorkItem} {
		m := ok(name, `{"key":"ENG-9","op_id":"01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f"}`)
		if f.lastG.key != "ENG-9" || f.lastW.OpID != "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f" || m["outcome"] != "applied" {
			t.Errorf("%s: %+v %+v %v", name, f.lastG, f.lastW, m)
		}
		if f.lastW.Digest == "" {
			t.Errorf("%s: no call digest", name)
		}
	}

	// Search reads the index as applied: no level, no floor of its own.
	res := call(t, ts, NameSearchWorkItems, `{"query":"login page","project":"ENG","limit":5}`)
	if res.IsError || f.lastR != (engine.ReadOptions{}) || f.lastG.query != "login page" || f.lastG.other != "ENG" || f.lastG.limit != 5 {
		t.Fatalf("search: %+v %+v %s", f.lastR, f.lastG, text(res))
	}
	if m := structured(t, res); !strings.Contains(mustJSON(m["hits"]), `"key":"ENG-1","score":3,"snippet":"[login] page","status":"open","title":"Fix the [login]"`) {
		t.Errorf("search answer %v", m)
	}
	call(t, ts, NameSearchWorkItems, `{"query":"x"}`)
	if f.lastG.limit != tracker.DefaultSearchLimit {
		t.Errorf("default limit %d", f.lastG.limit)
	}
}

// fakeUnits answers every call as the unit's first.
type fakeUnits struct{}

func (fakeUnits) Call(context.Context, string, string, string) (time.Time, int, error) {
	return time.Unix(1700000000, 0), 0, nil
}

func seatTools(t *testing.T, f *fakeTracker) map[string]server.ServerTool {
	t.Helper()
	return toolstest.ByName(tools.Catalogue{Toolset(f)}.Set(tools.Deps{Surface: tools.Seat, Units: fakeUnits{}}))
}

func seatCall(t *testing.T, st server.ServerTool, args string) *mcp.CallToolResult {
	t.Helper()
	var req mcp.CallToolRequest
	if err := json.Unmarshal([]byte(`{"name":`+mustJSON(st.Tool.Name)+`,"arguments":`+args+`}`), &req.Params); err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithTurn(context.Background(), tools.Turn{Seat: "seat-7", Unit: "unit-1"})
	res, err := st.Handler(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, st.Tool, res)
	return res
}

func TestSeatSurfaceHasNoPurgeAndSignsComments(t *testing.T) {
	f := &fakeTracker{}
	ts := seatTools(t, f)
	if _, ok := ts[NamePurgeWorkItem]; ok {
		t.Fatal("the seat surface has purge_work_item")
	}
	if len(ts) != len(operatorTools(t, &fakeTracker{}, nil))-1 {
		t.Errorf("seat has %d tools; want every operator tool but purge", len(ts))
	}
	comment := ts[NameCommentOnWorkItem]
	if _, ok := comment.Tool.InputSchema.Properties["author"]; ok {
		t.Error("a seat's comment takes an author")
	}
	res := seatCall(t, comment, `{"key":"ENG-1","body":"done"}`)
	if res.IsError || f.lastG.other != "seat-7" {
		t.Fatalf("seat comment signed %q: %s", f.lastG.other, text(res))
	}
	if res := seatCall(t, comment, `{"key":"ENG-1","body":"done","author":"ceo"}`); !res.IsError || !strings.Contains(message(t, res), `Unknown argument "author"`) {
		t.Errorf("a seat could sign as someone else: %s", text(res))
	}
	// Built for a seat anyway, purge refuses before the service.
	t2, h := purgeWorkItem(env{Deps: tools.Deps{Surface: tools.Seat, Units: fakeUnits{}}, svc: f})
	f.calls = nil
	res = seatCall(t, server.ServerTool{Tool: t2, Handler: h}, `{"key":"ENG-1"}`)
	if !res.IsError || len(f.calls) != 0 || !strings.Contains(message(t, res), "operators only") {
		t.Errorf("seat purge: %s, calls %v", text(res), f.calls)
	}
}

var walk = []tracker.Step{
	{Action: "mark", Task: "ENG-1", OpID: "g.s1", Outcome: engine.Applied, Position: "P1"},
	{Action: "move", Task: "ENG-1", OpID: "g.s2", Outcome: engine.Applied, Position: "P2"},
	{Action: "move", Task: "ENG-2", OpID: "g.s3", Outcome: engine.Unknown},
}

func TestGestureAnswers(t *testing.T) {
	// Unknown mid-walk, operator: the steps, the op_id to come back with.
	f := &fakeTracker{outcome: engine.Unknown, steps: walk}
	res := call(t, operatorTools(t, f, nil), NameMoveWorkItem, `{"key":"ENG-1","project":"OPS","op_id":"01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f"}`)
	m := structured(t, res)
	if res.IsError || m["outcome"] != "unknown" || m["op_id"] != "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f" || len(m["steps"].([]any)) != 3 {
		t.Errorf("answer %v", m)
	}
	if last := m["steps"].([]any)[2].(map[string]any); last["outcome"] != "unknown" || last["op_id"] != "g.s3" || last["task"] != "ENG-2" {
		t.Errorf("last step %v", last)
	}
	if msg, _ := m["message"].(string); !strings.Contains(msg, "op_id 01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f") {
		t.Errorf("message %q does not say which op_id to come back with", msg)
	}

	// The same on the seat surface says to repeat the call.
	res = seatCall(t, seatTools(t, f)[NameMoveWorkItem], `{"key":"ENG-1","project":"OPS"}`)
	if m := structured(t, res); !strings.Contains(m["message"].(string), "Repeat exactly the same call") || strings.Contains(m["message"].(string), "op_id") {
		t.Errorf("seat message %v", m["message"])
	}

	// A walk stopped behind a pending step, on the seat surface.
	f = &fakeTracker{outcome: engine.Pending, steps: []tracker.Step{{Action: "mark", Task: "ENG-1", OpID: "g.s1", Outcome: engine.Pending}}}
	res = seatCall(t, seatTools(t, f)[NameMoveWorkItem], `{"key":"ENG-1","project":"OPS"}`)
	if m := structured(t, res); !strings.Contains(m["message"].(string), "repeat exactly the same call") || m["outcome"] != "pending" || len(m["steps"].([]any)) != 1 {
		t.Errorf("seat pending walk %v: %s", m["message"], text(res))
	}

	// One-sided mirrors are named.
	f = &fakeTracker{steps: walk[:2], oneSided: []string{"ENG-4"}}
	res = call(t, operatorTools(t, f, nil), NameUpdateWorkItem, `{"key":"ENG-1","if_match":3,"add_dependencies":["ENG-4"]}`)
	if m := structured(t, res); !reflect.DeepEqual(m["one_sided"], []any{"ENG-4"}) {
		t.Errorf("one_sided %v", m["one_sided"])
	}

	// A refusal after steps landed names the gesture's op_id and the steps.
	landed := append(walk[:2:2], tracker.Step{Action: "move", Task: "ENG-2", OpID: "g.s3"})
	f = &fakeTracker{steps: landed, gestureErr: engine.Refuse(engine.CodeNotFound, "ENG-2 is gone.")}
	res = call(t, operatorTools(t, f, nil), NameTrashWorkItem, `{"key":"ENG-1"}`)
	m = structured(t, res)
	if !res.IsError || m["refused"] != "not_found" || m["op_id"] == nil || m["op_id"] == "" || len(m["steps"].([]any)) != 3 {
		t.Fatalf("failed gesture %v", m)
	}
	if msg := m["message"].(string); !strings.Contains(msg, "2 of the gesture's steps landed") || !strings.Contains(msg, "op_id "+m["op_id"].(string)) {
		t.Errorf("message %q", msg)
	}
	if last := m["steps"].([]any)[2].(map[string]any); last["task"] != "ENG-2" || last["outcome"] != "" {
		t.Errorf("the step not written %v", last)
	}

	// An internal error after steps landed is still answered internal, with
	// the op_id to finish under, and nothing of the detail.
	f = &fakeTracker{steps: landed, gestureErr: errSecret}
	res = call(t, operatorTools(t, f, nil), NameTrashWorkItem, `{"key":"ENG-1"}`)
	if m := structured(t, res); m["refused"] != "internal" || m["op_id"] == nil || strings.Contains(mustJSON(m), "secret") {
		t.Errorf("internal after steps %v", m)
	}
}
