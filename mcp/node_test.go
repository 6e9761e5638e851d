package mcp

import (
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestRealNodeOverHTTP runs a real node (embedded broker, SQLite) behind
// the operator MCP and drives it with the mcp-go client over HTTP.
func TestRealNodeOverHTTP(t *testing.T) {
	n := realNode(t)
	c := operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker())))
	checkToolList(t, c)

	version := createAndRead(t, c)
	upos := updateRepeatedAndStale(t, c, version)

	res := callTool(t, c, trackertools.NameListWorkItems, map[string]any{"project": "ENG"})
	if res.IsError {
		t.Fatalf("list_work_items: %s", textOf(res))
	}
	m := object(t, res)
	checkRead(t, "list_work_items", m, upos.Seq)
	if items, _ := m["items"].([]any); len(items) != 1 {
		t.Fatalf("items %v", m["items"])
	}

	res = callTool(t, c, trackertools.NameListProjects, nil)
	if res.IsError {
		t.Fatalf("list_projects: %s", textOf(res))
	}
	checkRead(t, "list_projects", object(t, res), upos.Seq)

	res = callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "NOPE", "title": "x"})
	if m := object(t, res); !res.IsError || m["refused"] != "not_found" {
		t.Fatalf("unknown project: %v", m)
	}
	res = callTool(t, c, trackertools.NameGetWorkItem, map[string]any{"key": "ENG-99"})
	if m := object(t, res); !res.IsError || m["refused"] != "not_found" {
		t.Fatalf("unknown item: %v", m)
	}
}

// createAndRead files ENG and ENG-1, then reads ENG-1 back at
// linearizable, at or past its create: the item's version.
func createAndRead(t *testing.T, c *client.Client) uint64 {
	t.Helper()
	res := callTool(t, c, trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"})
	if res.IsError {
		t.Fatalf("create_project: %s", textOf(res))
	}
	checkWrite(t, "create_project", object(t, res))

	res = callTool(t, c, trackertools.NameCreateWorkItem, map[string]any{"project": "ENG", "title": "Ship the MCP surface", "assignee": "ana"})
	if res.IsError {
		t.Fatalf("create_work_item: %s", textOf(res))
	}
	m := object(t, res)
	pos := checkWrite(t, "create_work_item", m)
	item, _ := m["item"].(map[string]any)
	if item["key"] != "ENG-1" || item["title"] != "Ship the MCP surface" {
		t.Fatalf("item %v", item)
	}
	version := uint64(item["version"].(float64))

	res = callTool(t, c, trackertools.NameGetWorkItem, map[string]any{"key": "ENG-1"})
	if res.IsError {
		t.Fatalf("get_work_item: %s", textOf(res))
	}
	m = object(t, res)
	checkRead(t, "get_work_item", m, pos.Seq)
	if got := m["item"].(map[string]any); uint64(got["version"].(float64)) != version || got["assignee"] != "ana" {
		t.Fatalf("got %v", got)
	}
	return version
}

// updateRepeatedAndStale updates ENG-1 against version, repeats the update
// under its op_id (the first answer again), and repeats it without (a
// stale if_match, refused): the update's position.
func updateRepeatedAndStale(t *testing.T, c *client.Client, version uint64) engine.Position {
	t.Helper()
	upd := map[string]any{"key": "ENG-1", "if_match": version, "status": "in_progress"}
	res := callTool(t, c, trackertools.NameUpdateWorkItem, upd)
	if res.IsError {
		t.Fatalf("update_work_item: %s", textOf(res))
	}
	m := object(t, res)
	upos := checkWrite(t, "update_work_item", m)
	opID := m["op_id"].(string)
	newVersion := uint64(m["item"].(map[string]any)["version"].(float64))
	if newVersion <= version || m["item"].(map[string]any)["status"] != "in_progress" {
		t.Fatalf("after update %v", m["item"])
	}

	// The same operation again (its op_id brought back) answers the first.
	again := map[string]any{"key": "ENG-1", "if_match": version, "status": "in_progress", "op_id": opID}
	res = callTool(t, c, trackertools.NameUpdateWorkItem, again)
	if res.IsError {
		t.Fatalf("repeat with op_id: %s", textOf(res))
	}
	if m := object(t, res); m["op_id"] != opID || m["position"] != upos.Token() {
		t.Fatalf("repeat answered %v, want op %s at %s", m, opID, upos.Token())
	}

	// A stale if_match is refused stale, as a result.
	res = callTool(t, c, trackertools.NameUpdateWorkItem, upd)
	if m := object(t, res); !res.IsError || m["refused"] != "stale" {
		t.Fatalf("stale update: %v", m)
	}
	return upos
}

// checkWrite holds a write's answer to the contract: applied, with an
// op_id and a position on the tracker's log, which it returns.
func checkWrite(t *testing.T, name string, m map[string]any) engine.Position {
	t.Helper()
	if m["outcome"] != "applied" {
		t.Fatalf("%s: outcome %v (%v)", name, m["outcome"], m)
	}
	op, _ := m["op_id"].(string)
	if op == "" {
		t.Fatalf("%s: no op_id: %v", name, m)
	}
	tok, _ := m["position"].(string)
	p, err := engine.ParsePosition(tok)
	if err != nil || p.Stream != engine.StreamTracker {
		t.Fatalf("%s: position %q: %v", name, tok, err)
	}
	return p
}

// checkRead holds a read's answer to the contract: linearizable and
// complete, seen through the tracker's log at or past atLeast (read your
// writes).
func checkRead(t *testing.T, name string, m map[string]any, atLeast uint64) {
	t.Helper()
	if m["level"] != string(engine.Linearizable) || m["complete"] != true {
		t.Fatalf("%s: level/complete %v", name, m)
	}
	st, _ := m["seen_through"].(map[string]any)
	if st["stream"] != engine.StreamTracker || st["generation"] != float64(1) {
		t.Fatalf("%s: seen_through %v", name, m["seen_through"])
	}
	if seq, _ := st["seq"].(float64); uint64(seq) < atLeast {
		t.Fatalf("%s: seen_through seq %v, want at least %d (read your writes)", name, seq, atLeast)
	}
}

// TestRealNodeBadInputPublishesNothing: the bad-input battery against a
// real node answers refusals with a code and a sentence, and nothing is
// written to the stream.
func TestRealNodeBadInputPublishesNothing(t *testing.T) {
	ctx := ctxT(t)
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	c := inProcess(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker())))
	if res := callTool(t, c, trackertools.NameCreateProject, map[string]any{"key": "ENG", "name": "Engineering"}); res.IsError {
		t.Fatal(textOf(res))
	}
	before := enginetest.LastWrite(t, n, engine.DomainTracker)
	cases := append(badInput[:len(badInput):len(badInput)], struct {
		name string
		tool string
		args map[string]any
	}{"unknown project", trackertools.NameCreateWorkItem, map[string]any{"project": "NOPE", "title": "x"}})
	for _, bc := range cases {
		res := callTool(t, c, bc.tool, bc.args)
		m := object(t, res)
		if !res.IsError || m["refused"] == nil || m["message"] == "" {
			t.Fatalf("%s: %v", bc.name, m)
		}
	}
	// A refusal decided from the rows appends a barrier to prove it holds
	// at the log's end; a barrier is not a write.
	if after := enginetest.LastWrite(t, n, engine.DomainTracker); after != before {
		t.Fatalf("bad input wrote to the stream: last write %d -> %d", before, after)
	}
}
