package kbtools

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/toolstest"
)

var kbNames = []string{NameListSpaces, NameCreateSpace, NameUpdateSpace, NameCreatePage, NameGetPage, NameListPages, NameUpdatePage, NameSearchKnowledge, NamePurgePage,
	NameGetSpace, NameListPageVersions, NameCommentOnPage}

// kbTools builds the operator set over a real node's knowledge base.
func kbTools(t *testing.T) (*node.Node, map[string]server.ServerTool) {
	t.Helper()
	n := enginetest.OpenNode(t, node.Config{})
	return n, toolstest.ByName(tools.Catalogue{Toolset(n.Pages())}.Set(tools.Deps{Surface: tools.Operator}))
}

func pagesLastSeq(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	return enginetest.LastWrite(t, n, engine.DomainPages)
}

// TestKBToolsInTheSet: the operator set offers every knowledge-base tool
// when it has a knowledge base (TestToolSnaps compares their snapshots),
// none without one, and the seat set never offers purge_page.
func TestKBToolsInTheSet(t *testing.T) {
	names := func(c tools.Catalogue, d tools.Deps) map[string]bool {
		out := map[string]bool{}
		for _, st := range c.Set(d) {
			out[st.Tool.Name] = true
		}
		return out
	}
	// A typed nil service: the definitions do not call it.
	with := names(tools.Catalogue{Toolset((*kb.Service)(nil))}, tools.Deps{Surface: tools.Operator})
	without := names(tools.Catalogue{Toolset(nil)}, tools.Deps{Surface: tools.Operator})
	for _, name := range kbNames {
		if !with[name] {
			t.Errorf("%s missing from the operator set", name)
		}
		if without[name] {
			t.Errorf("%s offered with no knowledge base", name)
		}
	}
	if names(tools.Catalogue{Toolset((*kb.Service)(nil))}, tools.Deps{Surface: tools.Seat})[NamePurgePage] {
		t.Error("purge_page offered on the seat surface: it is operator only")
	}
}

func TestKBAnnotations(t *testing.T) {
	want := map[string][4]bool{ // readOnly, destructive, idempotent, openWorld
		NameListSpaces:       {true, false, true, false},
		NameGetPage:          {true, false, true, false},
		NameListPages:        {true, false, true, false},
		NameSearchKnowledge:  {true, false, true, false},
		NameCreateSpace:      {false, false, true, false},
		NameUpdateSpace:      {false, false, true, false},
		NameCreatePage:       {false, false, false, false},
		NameUpdatePage:       {false, true, true, false}, // trashed
		NameGetSpace:         {true, false, true, false},
		NameListPageVersions: {true, false, true, false},
		NameCommentOnPage:    {false, false, false, false},
		NamePurgePage:        {false, true, true, false},
	}
	for _, st := range (tools.Catalogue{Toolset((*kb.Service)(nil))}).Set(tools.Deps{Surface: tools.Operator}) {
		w, ok := want[st.Tool.Name]
		if !ok {
			continue
		}
		a := st.Tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: an annotation is unset", st.Tool.Name)
		}
		if got := [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}; got != w {
			t.Errorf("%s: annotations %v, want %v", st.Tool.Name, got, w)
		}
		if string(st.Tool.RawOutputSchema) != `{"type":"object"}` {
			t.Errorf("%s: no output schema", st.Tool.Name)
		}
		if _, hasOpID := st.Tool.InputSchema.Properties[tools.ArgOpID]; hasOpID == *a.ReadOnlyHint {
			t.Errorf("%s: op_id present=%v on a readOnly=%v tool", st.Tool.Name, hasOpID, *a.ReadOnlyHint)
		}
	}
}

// TestKBToolsOverARealNode drives the handlers over a real node: answers
// carry structured content and a short text, and malformed arguments are
// invalid_argument results that publish nothing.
func TestKBToolsOverARealNode(t *testing.T) {
	n, ts := kbTools(t)
	res := call(t, ts, NameCreateSpace, `{"key":"DOCS","name":"Docs"}`)
	if m := structured(t, res); res.IsError || m["outcome"] != "applied" || m["space"].(map[string]any)["key"] != "DOCS" {
		t.Fatalf("create_space: %s", text(res))
	}
	res = call(t, ts, NameCreatePage, `{"space":"DOCS","title":"Runbook","body":"Restart node-3 with care."}`)
	m := structured(t, res)
	if res.IsError || m["outcome"] != "applied" {
		t.Fatalf("create_page: %s", text(res))
	}
	page := m["page"].(map[string]any)
	id := page["id"].(string)
	version := int(page["version"].(float64))
	res = call(t, ts, NameSearchKnowledge, `{"query":"node-3"}`)
	m = structured(t, res)
	if hits, _ := m["hits"].([]any); res.IsError || len(hits) != 1 || m["note"] != kb.SearchNote {
		t.Fatalf("search: %s %v", text(res), m)
	}
	res = call(t, ts, NameUpdatePage, `{"id":"`+id+`","if_match":`+mustJSON(version)+`,"title":"Runbook v2"}`)
	if res.IsError {
		t.Fatalf("update_page: %s", text(res))
	}
	res = call(t, ts, NameListPages, `{"space":"DOCS","parent":""}`)
	if m := structured(t, res); res.IsError || !strings.Contains(mustJSON(m["pages"]), `"title":"Runbook v2"`) {
		t.Fatalf("list_pages: %s", text(res))
	}
	res = call(t, ts, NameGetPage, `{"id":"`+id+`"}`)
	if m := structured(t, res); res.IsError || m["page"].(map[string]any)["body"] != "Restart node-3 with care." {
		t.Fatalf("get_page: %s", text(res))
	}

	long := strings.Repeat("x", kb.MaxTitleBytes+1)
	cases := []struct{ tool, args, mention string }{
		{NameCreateSpace, `{"key":"docs","name":"x"}`, "not a space key"},
		{NameCreateSpace, `{"key":"DOCS"}`, `Missing required argument "name"`},
		{NameUpdateSpace, `{"key":"DOCS"}`, "Nothing to change"},
		{NameUpdateSpace, `{"key":"DOCS","editing":"frozen"}`, `"editing"`},
		{NameCreatePage, `{"space":"DOCS","title":""}`, `"title" must not be empty`},
		{NameCreatePage, `{"space":"DOCS","title":` + mustJSON(long) + `}`, `"title"`},
		{NameCreatePage, `{"space":"DOCS","title":"x","parent":"ENG-1"}`, "not a page id"},
		{NameCreatePage, `{"space":"DOCS","title":"x","colour":"red"}`, `Unknown argument "colour"`},
		{NameGetPage, `{"id":"x"}`, "not a page id"},
		{NameGetPage, `{"id":"` + id + `","level":"stale"}`, `Unknown argument "level"`},
		{NameListPages, `{"space":"DOCS","limit":0}`, `"limit"`},
		{NameUpdatePage, `{"id":"` + id + `","if_match":1}`, "Nothing to change"},
		{NameUpdatePage, `{"id":"` + id + `","if_match":"1","title":"x"}`, "must be an integer"},
		{NameSearchKnowledge, `{"query":""}`, `"query" must not be empty`},
		{NameSearchKnowledge, `{"query":"x","limit":51}`, `"limit"`},
		{NameSearchKnowledge, `{"query":"()"}`, "no word"},
		{NamePurgePage, `{"id":"pg_zz"}`, "not a page id"},
		{NamePurgePage, `{}`, `Missing required argument "id"`},
	}
	for _, c := range cases {
		before := pagesLastSeq(t, n)
		res := call(t, ts, c.tool, c.args)
		m := structured(t, res)
		if msg, _ := m["message"].(string); !res.IsError || m["refused"] != string(engine.CodeInvalidArgument) || !strings.Contains(msg, c.mention) {
			t.Errorf("%s %s: %v %q", c.tool, c.args, m, text(res))
		}
		if after := pagesLastSeq(t, n); after != before {
			t.Errorf("%s %s: the pages log moved from %d to %d", c.tool, c.args, before, after)
		}
	}

	res = call(t, ts, NamePurgePage, `{"id":"`+id+`"}`)
	if m := structured(t, res); res.IsError || m["outcome"] != "applied" || m["space"] != "DOCS" {
		t.Fatalf("purge_page: %s", text(res))
	}
	res = call(t, ts, NameGetPage, `{"id":"`+id+`"}`)
	if m := structured(t, res); !res.IsError || m["refused"] != string(engine.CodeDeleted) {
		t.Fatalf("get after purge: %v", m)
	}
}

// The helpers the tests here call tools with (toolstest's).
var (
	call       = toolstest.Call
	structured = toolstest.Structured
	message    = toolstest.Message
	text       = toolstest.Text
	mustJSON   = toolstest.MustJSON
)
