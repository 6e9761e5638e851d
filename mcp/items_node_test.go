package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestRealNodeItemFieldsAndQueries drives the item fields, transitions,
// the cycle refusal, list_tags and list_work_items' filters and cursor
// through an mcp-go client over HTTP against a real node (embedded
// broker, SQLite).
func TestRealNodeItemFieldsAndQueries(t *testing.T) {
	n := realNode(t)
	k := caller{t, operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker())))}
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "OPS", "name": "Operations"})

	created := k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Crash on save",
		"priority": "high", "due": "2026-03-31", "estimate": 2.5, "type": "bug", "tags": []string{"ui"}})
	wantFields(t, "create", created["item"].(map[string]any), "high", "2026-03-31", 2.5, "bug")
	wantFields(t, "get", k.item("ENG-1"), "high", "2026-03-31", 2.5, "bug")
	k.applied(trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "priority": "urgent", "due": "", "estimate": 0})
	wantFields(t, "after update", k.item("ENG-1"), "urgent", "", 0, "bug")
	k.refused(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "x", "due": "31/03/2026"}, engine.CodeInvalidArgument)
	k.refused(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "x", "estimate": -1}, engine.CodeInvalidArgument)

	// A transition not allowed from the status names the allowed set.
	m := k.refused(trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "transition": "reopen"}, engine.CodeInvalidArgument)
	if msg := m["message"].(string); !strings.Contains(msg, "ENG-1 is open") || !strings.Contains(msg, "start, block, finish, cancel") {
		t.Fatalf("transition refusal %q", msg)
	}
	k.applied(trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "transition": "start"})
	if st := k.item("ENG-1")["status"]; st != "in_progress" {
		t.Fatalf("start left status %v", st)
	}

	// ENG-2 depends on ENG-1: ENG-1 depending on ENG-2 is a cycle.
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Release", "depends_on": []string{"ENG-1"}, "tags": []string{"ui", "docs"}})
	m = k.refused(trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-1", "add_dependencies": []string{"ENG-2"}}, engine.CodeInvalidArgument)
	if msg := m["message"].(string); !strings.Contains(msg, "ENG-1 depends on ENG-2, which depends on ENG-1") {
		t.Fatalf("cycle refusal %q", msg)
	}

	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "OPS", "title": "Rotate keys", "tags": []string{"ops"}, "type": "chore", "status": "blocked"})
	tags := k.applied(trackertools.NameListTags, map[string]any{})["tags"].([]any)
	if len(tags) != 3 || tags[0].(map[string]any)["tag"] != "ui" || tags[0].(map[string]any)["count"] != float64(2) {
		t.Fatalf("list_tags %v", tags)
	}
	same(t, "several statuses", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"status": "in_progress,blocked"}), "items"), []string{"ENG-1", "OPS-1"})
	same(t, "several types and projects", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"type": "bug,chore", "project": "ENG,OPS"}), "items"), []string{"ENG-1", "OPS-1"})
	same(t, "batch get", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"keys": "OPS-1,ENG-2"}), "items"), []string{"ENG-2", "OPS-1"})
	pagedListing(k)
}

func wantFields(t *testing.T, what string, it map[string]any, priority, due string, estimate float64, typ string) {
	t.Helper()
	if it["priority"] != priority || it["due"] != due || it["estimate"] != estimate || it["type"] != typ {
		t.Fatalf("%s: priority %v due %v estimate %v type %v", what, it["priority"], it["due"], it["estimate"], it["type"])
	}
}

// pagedListing: an item created between pages neither skips nor repeats
// a row; every later page is read at least at the first page's position;
// a cursor of another query is refused.
func pagedListing(k caller) {
	t := k.t
	for i := 0; i < 4; i++ {
		k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "OPS", "title": "chore"})
	}
	first := k.applied(trackertools.NameListWorkItems, map[string]any{"project": "OPS", "limit": 2})
	k.refused(trackertools.NameListWorkItems, map[string]any{"project": "ENG", "limit": 2, "cursor": first["next_cursor"]}, engine.CodeInvalidArgument)
	seen := keys(first, "items")
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "OPS", "title": "between pages"})
	floor := first["seen_through"].(map[string]any)["seq"].(float64)
	for c := first["next_cursor"]; c != nil; {
		page := k.applied(trackertools.NameListWorkItems, map[string]any{"project": "OPS", "limit": 2, "cursor": c})
		if seq := page["seen_through"].(map[string]any)["seq"].(float64); seq < floor {
			t.Fatalf("a later page read at %v, behind the first page's %v", seq, floor)
		}
		seen = append(seen, keys(page, "items")...)
		c = page["next_cursor"]
	}
	same(t, "pages", seen, []string{"OPS-1", "OPS-2", "OPS-3", "OPS-4", "OPS-5", "OPS-6"})
}

// TestSeatListsItsOwnItems: on the seat surface, assignee "me" is the seat
// the Crewlet-Seat header names.
func TestSeatListsItsOwnItems(t *testing.T) {
	n := realNode(t)
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Tracker())), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	k := caller{t, seatClient(t, ts.URL+"/seat/mcp", "unit-1")}
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "mine", "assignee": "seat-1"})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "theirs", "assignee": "bo"})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "also mine", "assignee": "seat-1", "priority": "low"})
	same(t, "me", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"assignee": "me"}), "items"), []string{"ENG-1", "ENG-3"})
	same(t, "me and bo", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"assignee": "me,bo", "sort": "priority"}), "items"), []string{"ENG-3", "ENG-1", "ENG-2"})
}
