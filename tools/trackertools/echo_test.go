//go:build integration

package trackertools

import (
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// TestRefusalsNeverEchoTheInput: a megabyte argument, wherever it goes
// (a value, an unknown name, an enum, a key, an edge's field), is refused
// with a sentence of bounded length.
func TestRefusalsNeverEchoTheInput(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters
	cases := []struct{ tool, args, mention string }{
		{NameGetWorkItem, `{"key":"` + huge + `"}`, `"key"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","status":"` + huge + `"}`, `"status"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","` + huge + `":1}`, "Unknown argument"},
		{NameListProjects, `{"` + huge + `":1}`, "Unknown argument"},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":1,"add_relations":[{"kind":"relates_to","key":"ENG-2","` + huge + `":1}]}`, "unknown field"},
		{NameUpdateWorkItem, `{"key":"ENG-1","if_match":1,"add_relations":[{"kind":"` + huge + `","key":"ENG-2"}]}`, `"add_relations[0].kind"`},
		{NameSearchWorkItems, `{"query":"` + huge + `"}`, `"query"`},
		{NameCreateWorkItem, `{"project":"ENG","title":"x","description":"` + strings.Repeat("d", 1<<20) + `"}`, `"description"`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.mention, func(t *testing.T) {
			res := call(t, operatorTools(t, &fakeTracker{}, nil), c.tool, c.args)
			m := structured(t, res)
			msg, _ := m["message"].(string)
			if !res.IsError || m["refused"] != string(engine.CodeInvalidArgument) || !strings.Contains(msg, c.mention) {
				t.Fatalf("got %.300v", m)
			}
			if len(msg) > maxMessage || len(text(res)) > maxMessage+200 {
				t.Errorf("the refusal is %d bytes (message %d): %.300s", len(text(res)), len(msg), msg)
			}
		})
	}
}
