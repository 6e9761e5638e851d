package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb/kbapply"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/ledger"
	"github.com/crewlet/crewlet/tools/kbtools"
)

// TestKBToolsOverHTTPOnARealNode drives the knowledge-base tools through
// the operator MCP (Streamable HTTP, bearer token, mcp-go client) over a
// real node: spaces, a page tree, a move refused for its cycle, search,
// and a purge whose children are re-filed and after which a stale
// writer's record is gated.
func TestKBToolsOverHTTPOnARealNode(t *testing.T) {
	ctx := ctxT(t)
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), Name: "n1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	c := operatorOverHTTP(t, NewServer("test", testLogger(t), catalogueOf(n.Tracker(), n.Pages())))
	checkKBTools(t, c)
	k := caller{t, c}

	k.ok(kbtools.NameCreateSpace, map[string]any{"key": "ENG", "name": "Engineering"})
	m := k.ok(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "Handbook"})
	pos, err := engine.ParsePosition(m["position"].(string))
	if err != nil || pos.Stream != engine.StreamPages {
		t.Fatalf("position %v: %v", m["position"], err)
	}
	root, _ := pageOf(m)
	mid, midV := pageOf(k.ok(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "On-call", "parent": root}))
	leaf, _ := pageOf(k.ok(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "Paging policy", "body": "Escalate after the pager fires twice.", "parent": mid}))

	// A move under the page's own child is refused, nothing published.
	before := lastPages(t, n)
	k.refused(kbtools.NameUpdatePage, map[string]any{"id": mid, "if_match": midV, "parent": leaf}, engine.CodeInvalidArgument)
	if lastPages(t, n) != before {
		t.Fatal("a refused move published")
	}
	readAndSearchLeaf(k, mid, leaf)
	purgeMid(k, root, mid, leaf)
	staleWriterGated(k, n, mid)

	m = k.ok(kbtools.NameListSpaces, nil)
	if sp := m["spaces"].([]any); len(sp) != 1 || sp[0].(map[string]any)["pages"] != float64(2) {
		t.Fatalf("list_spaces %v", m)
	}
	m = k.ok(kbtools.NameUpdateSpace, map[string]any{"key": "ENG", "editing": "locked"})
	k.refused(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": "x"}, engine.CodeInvalidArgument)
	k.refused(kbtools.NameCreatePage, map[string]any{"space": "ENG", "title": 7}, engine.CodeInvalidArgument)
	k.refused(kbtools.NameSearchKnowledge, map[string]any{"query": "x", "space": "eng"}, engine.CodeInvalidArgument)
}

// checkKBTools: the operator's list has every knowledge-base tool, and
// purge_page says it is destructive.
func checkKBTools(t *testing.T, c *client.Client) {
	t.Helper()
	list, err := c.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]mcpgo.Tool{}
	for _, tool := range list.Tools {
		got[tool.Name] = tool
	}
	for _, name := range []string{kbtools.NameListSpaces, kbtools.NameCreateSpace, kbtools.NameUpdateSpace, kbtools.NameCreatePage, kbtools.NameGetPage,
		kbtools.NameListPages, kbtools.NameUpdatePage, kbtools.NameSearchKnowledge, kbtools.NamePurgePage} {
		if _, ok := got[name]; !ok {
			t.Fatalf("tool %s missing", name)
		}
	}
	if d := got[kbtools.NamePurgePage].Annotations.DestructiveHint; d == nil || !*d {
		t.Fatal("purge_page is not marked destructive")
	}
}

// pageOf is the id and version of the page a page answer holds.
func pageOf(m map[string]any) (string, float64) {
	p := m["page"].(map[string]any)
	return p["id"].(string), p["version"].(float64)
}

// readAndSearchLeaf: the leaf reads at linearizable under mid, seen
// through the pages' log, and search finds it by its body's words.
func readAndSearchLeaf(k caller, mid, leaf string) {
	t := k.t
	m := k.ok(kbtools.NameGetPage, map[string]any{"id": leaf})
	if m["level"] != string(engine.Linearizable) || m["page"].(map[string]any)["parent"] != mid {
		t.Fatalf("get_page %v", m)
	}
	if st := m["seen_through"].(map[string]any); st["stream"] != engine.StreamPages {
		t.Fatalf("seen_through %v", st)
	}
	m = k.ok(kbtools.NameSearchKnowledge, map[string]any{"query": "pager"})
	if hits := m["hits"].([]any); len(hits) != 1 || hits[0].(map[string]any)["id"] != leaf || !strings.Contains(m["note"].(string), "no read-your-writes floor") {
		t.Fatalf("search %v", m)
	}
}

// purgeMid: purging mid re-files its leaf under root; brought back, the
// purge answers the first one; mid reads deleted.
func purgeMid(k caller, root, mid, leaf string) {
	t := k.t
	m := k.ok(kbtools.NamePurgePage, map[string]any{"id": mid})
	purgeOp := m["op_id"].(string)
	if r := m["refiled"].([]any); len(r) != 1 || r[0] != leaf || m["refiled_to"] != root {
		t.Fatalf("purge %v", m)
	}
	// Brought back, the purge answers the first one.
	if again := k.ok(kbtools.NamePurgePage, map[string]any{"id": mid, "op_id": purgeOp}); again["position"] != m["position"] {
		t.Fatalf("repeated purge %v, want %v", again, m["position"])
	}
	k.refused(kbtools.NameGetPage, map[string]any{"id": mid}, engine.CodeDeleted)
	if p := k.ok(kbtools.NameGetPage, map[string]any{"id": leaf})["page"].(map[string]any); p["parent"] != root {
		t.Fatalf("leaf not re-filed: %v", p)
	}
}

// staleWriterGated: a stale writer's record about the purged page,
// published after the purge, applies nowhere: the deletion gate drops it.
func staleWriterGated(k caller, n *node.Node, mid string) {
	t := k.t
	ctx := ctxT(t)
	op, _ := ledger.MintFor(time.Now(), "update_page", mid, "")
	payload, _ := json.Marshal(map[string]any{"id": mid, "title": "Back from the dead"})
	data, _ := record.Encode(&record.Record{Kind: kbrec.KindUpdatePage, Version: 1, OpID: op.String(), Writer: "n2", Generation: 1,
		Subject: "crewlet.pages.page." + mid, Scope: []string{"space:ENG", "page:" + mid}, Payload: payload})
	ack, err := n.Log(engine.DomainPages).Publish(ctx, "crewlet.pages.page."+mid, data, op.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.Replica(engine.DomainPages).WaitApplied(wctx, ack.Seq); err != nil {
		t.Fatal(err)
	}
	k.refused(kbtools.NameGetPage, map[string]any{"id": mid}, engine.CodeDeleted)
	if gate, _, dropped, err := n.Replica(engine.DomainPages).GatedAt(ctx, ack.Seq); err != nil || !dropped || gate != kbapply.GateDeleted {
		t.Fatalf("stale record at %d: gate %q dropped %v %v", ack.Seq, gate, dropped, err)
	}
}

func lastPages(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	return enginetest.LastWrite(t, n, engine.DomainPages)
}
