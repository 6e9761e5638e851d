package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/tools/kbtools"
)

// kbSeats serves n's knowledge base as the operator MCP and the seat MCP
// and returns an operator caller and one caller per seat named.
func kbSeats(t *testing.T, n *node.Node, seats ...string) (caller, map[string]caller) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: testLogger(t)}).Operator(SeatHandler(NewSeatServer(n.Units(), "test", testLogger(t), catalogueOf(n.Pages())), testLogger(t))))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	out := map[string]caller{}
	for _, s := range seats {
		c, err := client.NewStreamableHttpClient(ts.URL+"/seat/mcp", transport.WithHTTPHeaders(map[string]string{
			"Authorization": "Bearer " + testToken, HeaderSeat: s, HeaderUnit: "unit-" + s}))
		if err != nil {
			t.Fatal(err)
		}
		start(t, c)
		out[s] = caller{t, c}
	}
	return caller{t, operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Pages())))}, out
}

// TestKBLifecycleOverMCP drives the lifecycle tools through real MCP
// clients (the operator's and two seats') over a real node: comments
// edited by their author and refused to another seat, an archived space
// refusing a page, a move across spaces with its subtree, trash and
// restore, a title lookup, versions paged with positions, an old version
// read, and a paged listing with a page created between pages.
func TestKBLifecycleOverMCP(t *testing.T) {
	n := realNode(t)
	op, seats := kbSeats(t, n, "ana", "bob")
	ana, bob := seats["ana"], seats["bob"]
	op.applied(kbtools.NameCreateSpace, map[string]any{"key": "ENG", "name": "Engineering"})
	op.applied(kbtools.NameCreateSpace, map[string]any{"key": "OPS", "name": "Operations"})
	root, _ := pageOf(op.applied(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "Runbook", "body": "v1"}))
	child, _ := pageOf(op.applied(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "Restarts", "parent": root}))

	c := ana.applied(kbtools.NameCommentOnPage, map[string]any{"id": root, "body": "Needs a diagram."})
	cid := c["comment"].(map[string]any)["id"].(string)
	if c["comment"].(map[string]any)["author"] != "seat:ana" || c["position"] == "" {
		t.Fatalf("comment %v", c)
	}
	bob.refused(kbtools.NameCommentOnPage, map[string]any{"id": root, "comment_id": cid, "body": "Mine."}, engine.CodeInvalidArgument)
	ana.applied(kbtools.NameCommentOnPage, map[string]any{"id": root, "comment_id": cid, "body": "Needs two diagrams."})
	g := bob.ok(kbtools.NameGetPage, map[string]any{"title": "Runbook", "space": "ENG"})
	if cs := g["comments"].([]any); len(cs) != 1 || cs[0].(map[string]any)["body"] != "Needs two diagrams." || g["page"].(map[string]any)["id"] != root {
		t.Fatalf("get_page by title %v", g)
	}

	op.applied(kbtools.NameUpdateSpace, map[string]any{"key": "OPS", "archived": true})
	ana.refused(kbtools.NameCreatePage, map[string]any{"space": "OPS", "title": "x"}, engine.CodeInvalidArgument)
	if sp := ana.ok(kbtools.NameListSpaces, nil)["spaces"].([]any); len(sp) != 1 {
		t.Fatalf("list_spaces shows the archived space: %v", sp)
	}
	if s := ana.ok(kbtools.NameGetSpace, map[string]any{"key": "OPS"})["space"].(map[string]any); s["archived"] != true {
		t.Fatalf("get_space %v", s)
	}
	op.applied(kbtools.NameUpdateSpace, map[string]any{"key": "OPS", "archived": false})
	ana.applied(kbtools.NameUpdatePage, map[string]any{"id": root, "space": "OPS", "body": "v2"})
	if p := ana.ok(kbtools.NameGetPage, map[string]any{"id": child})["page"].(map[string]any); p["space"] != "OPS" || p["parent"] != root {
		t.Fatalf("the subtree did not follow: %v", p)
	}
	ana.applied(kbtools.NameUpdatePage, map[string]any{"id": root, "trashed": true})
	if pages := ana.ok(kbtools.NameListPages, map[string]any{"space": "OPS"})["pages"].([]any); len(pages) != 0 {
		t.Fatalf("trashed pages listed: %v", pages)
	}
	ana.applied(kbtools.NameUpdatePage, map[string]any{"id": root, "trashed": false})
	versionsOverMCP(t, ana, root)
	pagedOverMCP(t, op, bob)
}

// versionsOverMCP pages root's versions one at a time (create, move,
// trash, restore: four, each with its position) and reads the first.
func versionsOverMCP(t *testing.T, k caller, root string) {
	var got []map[string]any
	args := map[string]any{"id": root, "limit": 1}
	for {
		m := k.ok(kbtools.NameListPageVersions, args)
		for _, v := range m["versions"].([]any) {
			got = append(got, v.(map[string]any))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		args["cursor"] = next
	}
	if len(got) != 4 || got[3]["title"] != "Runbook" || got[1]["trashed"] != true {
		t.Fatalf("versions %v", got)
	}
	for _, v := range got {
		if pos, err := engine.ParsePosition(v["position"].(string)); err != nil || float64(pos.Seq) != v["version"] {
			t.Fatalf("version %v: position %v", v, err)
		}
	}
	old := k.ok(kbtools.NameGetPage, map[string]any{"id": root, "version": got[3]["version"]})["page"].(map[string]any)
	if old["body"] != "v1" || old["space"] != "ENG" {
		t.Fatalf("the first version reads %v", old)
	}
}

// pagedOverMCP lists ENG's pages two at a time with a page created
// between the pages: every page once, the new one last; a cursor brought
// to another space is refused.
func pagedOverMCP(t *testing.T, op, k caller) {
	var want []string
	for _, title := range []string{"a", "b", "c"} {
		id, _ := pageOf(op.applied(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": title}))
		want = append(want, id)
	}
	m := k.ok(kbtools.NameListPages, map[string]any{"space": "ENG", "limit": 2})
	late, _ := pageOf(op.applied(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "late"}))
	want = append(want, late)
	var got []string
	for {
		for _, p := range m["pages"].([]any) {
			got = append(got, p.(map[string]any)["id"].(string))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		k.refused(kbtools.NameListPages, map[string]any{"space": "OPS", "limit": 2, "cursor": next}, engine.CodeInvalidArgument)
		m = k.ok(kbtools.NameListPages, map[string]any{"space": "ENG", "limit": 2, "cursor": next})
	}
	if len(got) != len(want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("paged %v, want %v", got, want)
		}
	}
}
