package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools"
)

// TestRealNodeTrackerGestures drives comment, merge, move, trash, restore,
// search, an update with edges and purge through an mcp-go client over
// HTTP against a real node (embedded broker, SQLite), and checks the rows
// each leaves through the read tools.
func TestRealNodeTrackerGestures(t *testing.T) {
	ctx := ctxT(t)
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/operator/mcp", OperatorHandler(NewServer("test", testLogger(t), n.Tracker()), HTTPOptions{Token: testToken, Logger: testLogger(t)}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c := httpClient(t, ts.URL+"/operator/mcp", testToken)

	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res := callTool(t, c, name, args)
		if res.IsError {
			t.Fatalf("%s %v: %s", name, args, textOf(res))
		}
		m := object(t, res)
		if o, has := m["outcome"]; has && o != "applied" {
			t.Fatalf("%s: outcome %v: %s", name, o, textOf(res))
		}
		return m
	}
	item := func(key string) map[string]any {
		t.Helper()
		return ok(tools.NameGetWorkItem, map[string]any{"key": key})["item"].(map[string]any)
	}
	steps := func(m map[string]any) []string {
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
	keys := func(m map[string]any, field string) []string {
		var out []string
		list, _ := m[field].([]any)
		for _, x := range list {
			out = append(out, x.(map[string]any)["key"].(string))
		}
		return out
	}
	same := func(what string, got, want []string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}

	ok(tools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	ok(tools.NameCreateProject, map[string]any{"key": "OPS", "name": "Operations"})
	ok(tools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Login page broken", "tags": []string{"ui"}})
	ok(tools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Fix the form", "parent": "ENG-1"})
	ok(tools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Cannot log in"})
	dep := ok(tools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Release notes", "depends_on": []string{"ENG-1"}})
	same("create with depends_on", steps(dep), []string{"create ENG-4", "mirror ENG-1"})

	// comment, and search finds its words.
	ok(tools.NameCommentOnWorkItem, map[string]any{"key": "ENG-1", "body": "the password field eats characters", "author": "ana"})
	got := ok(tools.NameGetWorkItem, map[string]any{"key": "ENG-1"})
	if cs, _ := got["comments"].([]any); len(cs) != 1 || cs[0].(map[string]any)["author"] != "ana" {
		t.Fatalf("comments %v", got["comments"])
	}
	hits := ok(tools.NameSearchWorkItems, map[string]any{"query": "password"})
	same("search by a comment's words", keys(hits, "hits"), []string{"ENG-1"})
	if note, _ := hits["note"].(string); !strings.Contains(note, "read-your-writes") {
		t.Errorf("search note %q", hits["note"])
	}

	// update with a tag, a watcher and a relation: the mirror is a step.
	v := item("ENG-3")["version"]
	upd := ok(tools.NameUpdateWorkItem, map[string]any{"key": "ENG-3", "if_match": v, "add_tags": []string{"auth"}, "add_watchers": []string{"bo"},
		"add_relations": []map[string]any{{"kind": "relates_to", "key": "ENG-4"}}})
	same("update with a relation", steps(upd), []string{"update ENG-3", "mirror ENG-4"})

	// merge: ENG-3 is cancelled as a duplicate of ENG-1, its watcher joins.
	merged := ok(tools.NameMergeWorkItems, map[string]any{"into": "ENG-1", "duplicates": []string{"ENG-3"}})
	same("merge", steps(merged), []string{"mark ENG-1", "merge ENG-3", "unmark ENG-1"})
	if dup := item("ENG-3"); dup["status"] != "cancelled" {
		t.Fatalf("duplicate after merge %v", dup)
	}
	if kept := item("ENG-1"); !strings.Contains(mustString(kept["watchers"]), "bo") || kept["mark"] != nil {
		t.Fatalf("kept item after merge %v", kept)
	}

	// move: the subtree follows, root first; old keys still resolve.
	moved := ok(tools.NameMoveWorkItem, map[string]any{"key": "ENG-1", "project": "OPS"})
	same("move", steps(moved), []string{"mark ENG-1", "move ENG-1", "move ENG-2", "unmark OPS-1"})
	if moved["item"].(map[string]any)["key"] != "OPS-1" || item("ENG-2")["key"] != "OPS-2" {
		t.Fatalf("after move: %v, ENG-2 is %v", moved["item"], item("ENG-2")["key"])
	}
	kids := ok(tools.NameListWorkItems, map[string]any{"parent": "OPS-1"})
	same("children after the move", keys(kids, "items"), []string{"OPS-2"})

	// trash takes the subtree out of lists and search; restore brings it back.
	trashed := ok(tools.NameTrashWorkItem, map[string]any{"key": "OPS-1"})
	same("trash", steps(trashed), []string{"trash OPS-1", "trash OPS-2"})
	same("OPS after trash", keys(ok(tools.NameListWorkItems, map[string]any{"project": "OPS"}), "items"), nil)
	same("search after trash", keys(ok(tools.NameSearchWorkItems, map[string]any{"query": "password"}), "hits"), nil)
	restored := ok(tools.NameRestoreWorkItem, map[string]any{"key": "OPS-1"})
	same("restore", steps(restored), []string{"restore OPS-1", "restore OPS-2"})
	same("OPS after restore", keys(ok(tools.NameListWorkItems, map[string]any{"project": "OPS"}), "items"), []string{"OPS-1", "OPS-2"})

	// purge (operator only): the item is gone, and a repeat under the same
	// op_id answers the first purge.
	purged := ok(tools.NamePurgeWorkItem, map[string]any{"key": "ENG-4"})
	if res := callTool(t, c, tools.NameGetWorkItem, map[string]any{"key": "ENG-4"}); !res.IsError || object(t, res)["refused"] != "deleted" {
		t.Fatalf("purged item read: %s", textOf(res))
	}
	again := ok(tools.NamePurgeWorkItem, map[string]any{"key": "ENG-4", "op_id": purged["op_id"]})
	if again["op_id"] != purged["op_id"] || again["position"] != purged["position"] {
		t.Fatalf("purge repeated answered %v, want %v", again, purged)
	}
	if res := callTool(t, c, tools.NamePurgeWorkItem, map[string]any{"key": "ENG-4"}); !res.IsError || object(t, res)["refused"] != "deleted" {
		t.Fatalf("a second purge: %s", textOf(res))
	}
	// The edges to it went: ENG-3's relation to ENG-4 is no more.
	if edges := mustString(item("ENG-3")["edges"]); strings.Contains(edges, "ENG-4") {
		t.Fatalf("ENG-3 still has an edge to the purged ENG-4: %s", edges)
	}

	// The seat toolset over the same node has no purge.
	seat := inProcess(t, NewSeatServer(n.Units(), "test", testLogger(t), n.Tracker()))
	list, err := seat.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == tools.NamePurgeWorkItem {
			t.Fatal("the seat toolset has purge_work_item")
		}
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
