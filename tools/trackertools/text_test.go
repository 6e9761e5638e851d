package trackertools

import (
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// maxMessage bounds a refusal's message in these tests: a sentence and a
// capped quote of the input, never the input itself.
const maxMessage = 1 << 10

// TestTextArgumentsAreCheckedCentrally: every text argument, list items
// and edge keys included, is refused invalid_argument naming it when it
// holds a NUL byte, invalid UTF-8 (raw bytes off the wire, or a lone
// surrogate escape) or a control character (line breaks and tabs pass in
// long text only), before the service is called; what is plain text
// passes.
func TestTextArgumentsAreCheckedCentrally(t *testing.T) {
	refused := []struct {
		tool, args, field, mention string
	}{
		{NameSearchWorkItems, `{"query":"login\u0000page"}`, `"query"`, "NUL byte"},
		{NameSearchWorkItems, `{"query":"login` + "\xff" + `page"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\ud800page"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\udc00"}`, `"query"`, "not valid UTF-8"},
		{NameSearchWorkItems, `{"query":"login\ud800\u0041"}`, `"query"`, "not valid UTF-8"},
		{NameCreateWorkItem, `{"project":"ENG","title":"two\nlines"}`, `"title"`, "U+000A"},
		{NameCreateWorkItem, `{"project":"ENG","title":"tab\there"}`, `"title"`, "U+0009"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","description":"bell\u0007"}`, `"description"`, "U+0007"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","description":"nul\u0000"}`, `"description"`, "NUL byte"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","assignee":"del\u007f"}`, `"assignee"`, "U+007F"},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","tags":["ok","c1\u0085"]}`, `"tags[1]"`, "U+0085"},
		{NameCreateWorkItem, `{"project":"ENG\u0000","title":"x"}`, `"project"`, "NUL byte"},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":1,"add_relations":[{"kind":"relates_to","key":"ENG-2\u0000"}]}`, `"add_relations[0].key"`, "NUL byte"},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"esc\u001b[31m"}`, `"body"`, "U+001B"},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"x","author":"a\nb"}`, `"author"`, "U+000A"},
		{NameListWorkItems, `{"cursor":"c\r"}`, `"cursor"`, "U+000D"},
		{NameCreateProject, `{"key":"ENG","name":"x","op_id":"op\u0000"}`, `"op_id"`, "NUL byte"},
	}
	for _, c := range refused {
		t.Run("refused "+c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			res := call(t, operatorTools(t, f, nil), c.tool, c.args)
			m := structured(t, res)
			msg, _ := m["message"].(string)
			if !res.IsError || m["refused"] != string(engine.CodeInvalidArgument) || !strings.Contains(msg, c.field) || !strings.Contains(msg, c.mention) {
				t.Fatalf("want invalid_argument naming %s and %s, got %v", c.field, c.mention, m)
			}
			if len(f.calls) != 0 {
				t.Errorf("the service was called: %v", f.calls)
			}
		})
	}
	passed := []struct{ tool, args string }{
		{NameCreateWorkItem, `{"project":"ENG","title":"Ünïcødé — 日本 😀 \ud83d\ude00","description":"line one\r\nline two\n\tindented"}`},
		{NameCommentOnWorkItem, `{"key":"ENG-1","body":"a\nb\tc"}`},
		{NameSearchWorkItems, `{"query":"a \\u0000 escaped backslash is plain text"}`},
		{NameCreateWorkItem, `{"project":"ENG","title":"replacement \ufffd is a character"}`},
	}
	for _, c := range passed {
		t.Run("passed "+c.tool+" "+truncate(c.args), func(t *testing.T) {
			f := &fakeTracker{}
			if res := call(t, operatorTools(t, f, nil), c.tool, c.args); res.IsError {
				t.Fatalf("refused: %s", text(res))
			}
		})
	}
}
