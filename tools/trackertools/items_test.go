package trackertools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// TestItemArgumentsReachTheService: the item fields, the transition and
// list_work_items' new filters reach the service as given; on the seat
// surface "me" among the assignees is the seat.
func TestItemArgumentsReachTheService(t *testing.T) {
	f := &fakeTracker{}
	ts := operatorTools(t, f, nil)
	ok := func(name, args string) {
		t.Helper()
		if res := call(t, ts, name, args); res.IsError {
			t.Fatalf("%s %s: %s", name, args, text(res))
		}
	}
	ok(NameCreateWorkItem, `{"project":"ENG","title":"t","priority":"high","due":"2026-03-31","estimate":1.5,"type":"bug"}`)
	if n := f.lastNew; n.Priority != "high" || n.Due != "2026-03-31" || n.Estimate != 1.5 || n.Type != "bug" {
		t.Fatalf("create fields %+v", n)
	}
	ok(NameUpdateWorkItem, `{"key":"ENG-1","transition":"finish","due":"","estimate":0}`)
	if p := f.lastP; p.Transition != "finish" || p.Due == nil || *p.Due != "" || p.Estimate == nil || *p.Estimate != 0 || p.Priority != nil || p.Type != nil {
		t.Fatalf("update patch %+v", p)
	}
	ok(NameListWorkItems, `{"status":"open,blocked","assignee":"me","priority":"high","type":"bug,epic","keys":"ENG-1,ENG-2","updated_since":"2026-01-01T00:00:00Z","trashed":true,"sort":"-updated","tag":"a,b","project":"ENG,OPS"}`)
	want := tracker.ListFilter{Status: "open,blocked", Assignee: "me", Priority: "high", Type: "bug,epic", Keys: "ENG-1,ENG-2",
		UpdatedSince: "2026-01-01T00:00:00Z", Trashed: true, Sort: "-updated", Tag: "a,b", Project: "ENG,OPS", Limit: tracker.DefaultListLimit}
	if f.lastF != want {
		t.Fatalf("list filter %+v", f.lastF)
	}
	ok(NameListTags, `{"project":"ENG"}`)
	if f.lastG.other != "ENG" {
		t.Fatalf("list_tags project %q", f.lastG.other)
	}

	seat := seatTools(t, f)
	if res := seatCall(t, seat[NameListWorkItems], `{"assignee":"bo, me"}`); res.IsError || f.lastF.Assignee != "bo,seat-7" {
		t.Fatalf("seat's me: %q %s", f.lastF.Assignee, text(res))
	}
	var req mcp.CallToolRequest
	if err := json.Unmarshal([]byte(`{"name":"list_work_items","arguments":{"assignee":"me"}}`), &req.Params); err != nil {
		t.Fatal(err)
	}
	res, err := seat[NameListWorkItems].Handler(tools.WithTurn(context.Background(), tools.Turn{Unit: "u"}), req)
	if err != nil || !res.IsError || !strings.Contains(text(res), "Crewlet-Seat") {
		t.Fatalf("me without a seat: %v %s", err, text(res))
	}
}

// TestItemArgumentsRefusedBeforeTheService: malformed fields, transitions
// and filters are refused invalid_argument naming the argument.
func TestItemArgumentsRefusedBeforeTheService(t *testing.T) {
	f := &fakeTracker{}
	ts := operatorTools(t, f, nil)
	for _, c := range []struct{ name, args, want string }{
		{NameCreateWorkItem, `{"project":"ENG","title":"t","priority":"p0"}`, `"priority"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"t","estimate":"3"}`, `"estimate" must be a number`},
		{NameCreateWorkItem, `{"project":"ENG","title":"t","estimate":-2}`, `"estimate"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"t","due":"2026-03-31T00:00"}`, `"due"`},
		{NameUpdateWorkItem, `{"key":"ENG-1","transition":"go"}`, `"transition"`},
		{NameListWorkItems, `{"trashed":"yes"}`, `"trashed" must be a boolean`},
		{NameListWorkItems, `{"sort":"title"}`, `"sort"`},
		{NameListTags, `{"project":"eng"}`, `not a project key`},
	} {
		res := call(t, ts, c.name, c.args)
		if !res.IsError || !strings.Contains(message(t, res), c.want) {
			t.Errorf("%s %s: want a refusal naming %s, got %s", c.name, c.args, c.want, text(res))
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("refused calls reached the service: %v", f.calls)
	}
}
