package kbtools

import (
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// TestKBLifecycleBadInput: the lifecycle tools' malformed arguments are
// invalid_argument results with a sentence, over a real node, and publish
// nothing.
func TestKBLifecycleBadInput(t *testing.T) {
	n, ts := kbTools(t)
	if res := call(t, ts, NameCreateSpace, `{"key":"DOCS","name":"Docs"}`); res.IsError {
		t.Fatal(text(res))
	}
	m := structured(t, call(t, ts, NameCreatePage, `{"space":"DOCS","title":"Runbook"}`))
	id := m["page"].(map[string]any)["id"].(string)
	cases := []struct{ tool, args, mention string }{
		{NameUpdatePage, `{"id":"` + id + `","trashed":"true"}`, "must be a boolean"},
		{NameUpdatePage, `{"id":"` + id + `","trashed":true,"title":"x"}`, "trashed goes alone"},
		{NameUpdatePage, `{"id":"` + id + `","space":"docs"}`, "not a space key"},
		{NameUpdateSpace, `{"key":"DOCS","archived":1}`, "must be a boolean"},
		{NameGetPage, `{}`, "give id, or title with space"},
		{NameGetPage, `{"title":"Runbook"}`, "give id, or title with space"},
		{NameGetSpace, `{"key":"docs"}`, "not a space key"},
		{NameListSpaces, `{"cursor":"nope"}`, "cursor"},
		{NameListPageVersions, `{"id":"x"}`, "not a page id"},
		{NameCommentOnPage, `{"id":"` + id + `"}`, "body"},
		{NameCommentOnPage, `{"id":"` + id + `","delete":true}`, "delete needs comment_id"},
		{NameCommentOnPage, `{"id":"` + id + `","comment_id":"c1","body":"x"}`, "not a comment id"},
		{NameSearchKnowledge, `{"query":"runbook","cursor":"e30"}`, "cursor"},
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
}
