package mcp

import (
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestRealNodeTrackerGestures drives comment, merge, move, trash, restore,
// search, an update with edges and purge through an mcp-go client over
// HTTP against a real node (embedded broker, SQLite), and checks the rows
// each leaves through the read tools.
func TestRealNodeTrackerGestures(t *testing.T) {
	n := realNode(t)
	k := caller{t, operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker())))}

	k.applied(trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	k.applied(trackertools.NameCreateProject, map[string]any{"key": "OPS", "name": "Operations"})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Login page broken", "tags": []string{"ui"}})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Fix the form", "parent": "ENG-1"})
	k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Cannot log in"})
	dep := k.applied(trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Release notes", "depends_on": []string{"ENG-1"}})
	same(t, "create with depends_on", steps(t, dep), []string{"create ENG-4", "mirror ENG-1"})

	commentAndSearch(k)
	updateAndMerge(k)
	moveTrashRestore(k)
	purgeItem(k)

	// The seat toolset over the same node has no purge.
	seat := inProcess(t, NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Tracker())))
	list, err := seat.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == trackertools.NamePurgeWorkItem {
			t.Fatal("the seat toolset has purge_work_item")
		}
	}
}

// commentAndSearch: a comment on ENG-1, and search finds its words.
func commentAndSearch(k caller) {
	t := k.t
	k.applied(trackertools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "the password field eats characters", "author": "ana"})
	got := k.applied(trackertools.NameGetWorkItem, map[string]any{"key": "ENG-1"})
	if cs, _ := got["comments"].([]any); len(cs) != 1 || cs[0].(map[string]any)["author"] != "ana" {
		t.Fatalf("comments %v", got["comments"])
	}
	hits := k.applied(trackertools.NameSearchWorkItems, map[string]any{"query": "password"})
	same(t, "search by a comment's words", keys(hits, "hits"), []string{"ENG-1"})
	if note, _ := hits["note"].(string); !strings.Contains(note, "read-your-writes") {
		t.Errorf("search note %q", hits["note"])
	}
}

// updateAndMerge: an update with a tag, a watcher and a relation (the
// mirror is a step), then ENG-3 merged into ENG-1: cancelled as its
// duplicate, its watcher joins.
func updateAndMerge(k caller) {
	t := k.t
	v := k.item("ENG-3")["version"]
	upd := k.applied(trackertools.NameUpdateWorkItem, map[string]any{"key": "ENG-3", "if_match": v, "add_tags": []string{"auth"}, "add_watchers": []string{"bo"},
		"add_relations": []map[string]any{{"kind": "relates_to", "key": "ENG-4"}}})
	same(t, "update with a relation", steps(t, upd), []string{"update ENG-3", "mirror ENG-4"})

	merged := k.applied(trackertools.NameMergeWorkItems, map[string]any{"into": "ENG-1", "duplicates": []string{"ENG-3"}})
	same(t, "merge", steps(t, merged), []string{"mark ENG-1", "merge ENG-3", "unmark ENG-1"})
	if dup := k.item("ENG-3"); dup["status"] != "cancelled" {
		t.Fatalf("duplicate after merge %v", dup)
	}
	if kept := k.item("ENG-1"); !strings.Contains(mustString(kept["watchers"]), "bo") || kept["mark"] != nil {
		t.Fatalf("kept item after merge %v", kept)
	}
}

// moveTrashRestore: a move takes the subtree along, root first, and old
// keys still resolve; trash takes the subtree out of lists and search,
// restore brings it back.
func moveTrashRestore(k caller) {
	t := k.t
	moved := k.applied(trackertools.NameMoveWorkItem, map[string]any{"key": "ENG-1", "project": "OPS"})
	same(t, "move", steps(t, moved), []string{"mark ENG-1", "move ENG-1", "move ENG-2", "unmark OPS-1"})
	if moved["item"].(map[string]any)["key"] != "OPS-1" || k.item("ENG-2")["key"] != "OPS-2" {
		t.Fatalf("after move: %v, ENG-2 is %v", moved["item"], k.item("ENG-2")["key"])
	}
	kids := k.applied(trackertools.NameListWorkItems, map[string]any{"parent": "OPS-1"})
	same(t, "children after the move", keys(kids, "items"), []string{"OPS-2"})

	trashed := k.applied(trackertools.NameTrashWorkItem, map[string]any{"key": "OPS-1"})
	same(t, "trash", steps(t, trashed), []string{"trash OPS-1", "trash OPS-2"})
	same(t, "OPS after trash", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"project": "OPS"}), "items"), nil)
	same(t, "search after trash", keys(k.applied(trackertools.NameSearchWorkItems, map[string]any{"query": "password"}), "hits"), nil)
	restored := k.applied(trackertools.NameRestoreWorkItem, map[string]any{"key": "OPS-1"})
	same(t, "restore", steps(t, restored), []string{"restore OPS-1", "restore OPS-2"})
	same(t, "OPS after restore", keys(k.applied(trackertools.NameListWorkItems, map[string]any{"project": "OPS"}), "items"), []string{"OPS-1", "OPS-2"})
}

// purgeItem: purge (operator only) takes ENG-4 and the edges to it, and a
// repeat under the same op_id answers the first purge.
func purgeItem(k caller) {
	t, c := k.t, k.c
	purged := k.applied(trackertools.NamePurgeWorkItem, map[string]any{"key": "ENG-4"})
	if res := callTool(t, c, trackertools.NameGetWorkItem, map[string]any{"key": "ENG-4"}); !res.IsError || object(t, res)["refused"] != "deleted" {
		t.Fatalf("purged item read: %s", textOf(res))
	}
	again := k.applied(trackertools.NamePurgeWorkItem, map[string]any{"key": "ENG-4", "op_id": purged["op_id"]})
	if again["op_id"] != purged["op_id"] || again["position"] != purged["position"] {
		t.Fatalf("purge repeated answered %v, want %v", again, purged)
	}
	if res := callTool(t, c, trackertools.NamePurgeWorkItem, map[string]any{"key": "ENG-4"}); !res.IsError || object(t, res)["refused"] != "deleted" {
		t.Fatalf("a second purge: %s", textOf(res))
	}
	// The edges to it went: ENG-3's relation to ENG-4 is no more.
	if edges := mustString(k.item("ENG-3")["edges"]); strings.Contains(edges, "ENG-4") {
		t.Fatalf("ENG-3 still has an edge to the purged ENG-4: %s", edges)
	}
}

// item is a work item as get_work_item reads it.
func (k caller) item(key string) map[string]any {
	k.t.Helper()
	return k.applied(trackertools.NameGetWorkItem, map[string]any{"key": key})["item"].(map[string]any)
}

// steps is a gesture's steps as "action task", each of which must have
// applied.
func steps(t *testing.T, m map[string]any) []string {
	t.Helper()
	var out []string
	list, _ := m["steps"].([]any)
	for _, s := range list {
		s := s.(map[string]any)
		if s["outcome"] != "applied" {
			t.Fatalf("step %v not applied", s)
		}
		out = append(out, s["action"].(string)+" "+s["task"].(string))
	}
	return out
}

// keys is the keys of the items a list or search answer holds in field.
func keys(m map[string]any, field string) []string {
	var out []string
	list, _ := m[field].([]any)
	for _, x := range list {
		out = append(out, x.(map[string]any)["key"].(string))
	}
	return out
}

// same fails the test unless got and want list the same keys in order.
func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func mustString(v any) string {
	var b strings.Builder
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			b.WriteString(mustString(e))
			b.WriteByte(' ')
		}
	case map[string]any:
		for k, e := range x {
			b.WriteString(k + "=" + mustString(e) + " ")
		}
	case string:
		b.WriteString(x)
	}
	return b.String()
}
