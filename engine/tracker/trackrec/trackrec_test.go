package trackrec_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record/recordtest"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestPayloadsOnTheWire pins every payload's JSON as the records on a
// log hold it: a field renamed, reordered or given another omitempty is a
// record an older build reads otherwise.
func TestPayloadsOnTheWire(t *testing.T) {
	s := func(v string) *string { return &v }
	f, b := 1.5, true
	e := []trackrec.EdgeRef{{Kind: trackrec.EdgeDependsOn, Other: "wi_b"}}
	for i, c := range []struct {
		payload any
		wire    string
	}{
		{trackrec.CreateProject{Key: "ENG", Name: "n"},
			`{"key":"ENG","name":"n"}`},
		{trackrec.CreateWorkItem{ID: "a", Project: "P", Number: 3, Title: "t", Description: "d", Status: "open", Assignee: "x", Parent: "p", Tags: []string{"t"}, Edges: e, Priority: "high", Due: "2026-01-01", Estimate: 2, Type: "bug"},
			`{"id":"a","project":"P","number":3,"title":"t","description":"d","status":"open","assignee":"x","parent":"p","tags":["t"],"edges":[{"kind":"depends_on","other":"wi_b"}],"priority":"high","due":"2026-01-01","estimate":2,"type":"bug"}`},
		{trackrec.CreateWorkItem{ID: "a"},
			`{"id":"a","project":"","number":0,"title":"","description":"","status":"","assignee":""}`},
		{trackrec.UpdateWorkItem{ID: "a", Title: s("t"), Description: s("d"), Status: s("s"), Assignee: s("a"), Parent: s(""), AddTags: []string{"x"}, RemoveTags: []string{"y"}, AddWatchers: []string{"w"}, RemoveWatchers: []string{"v"}, AddEdges: e, RemoveEdges: e, Priority: s("low"), Due: s(""), Estimate: &f, Type: s("epic")},
			`{"id":"a","title":"t","description":"d","status":"s","assignee":"a","parent":"","add_tags":["x"],"remove_tags":["y"],"add_watchers":["w"],"remove_watchers":["v"],"add_edges":[{"kind":"depends_on","other":"wi_b"}],"remove_edges":[{"kind":"depends_on","other":"wi_b"}],"priority":"low","due":"","estimate":1.5,"type":"epic"}`},
		{trackrec.UpdateWorkItem{ID: "a"},
			`{"id":"a"}`},
		{trackrec.MirrorEdges{ID: "a", Add: e, Remove: e},
			`{"id":"a","add":[{"kind":"depends_on","other":"wi_b"}],"remove":[{"kind":"depends_on","other":"wi_b"}]}`},
		{trackrec.MirrorEdges{ID: "a"},
			`{"id":"a"}`},
		{trackrec.Comment{ID: "a", Author: "x", Body: "b"},
			`{"id":"a","author":"x","body":"b"}`},
		{trackrec.Mark{ID: "a", Mark: "m"},
			`{"id":"a","mark":"m"}`},
		{trackrec.Mark{ID: "a"},
			`{"id":"a","mark":""}`},
		{trackrec.Move{ID: "a", To: "B"},
			`{"id":"a","to":"B"}`},
		{trackrec.MergeDuplicate{ID: "a", Into: "b"},
			`{"id":"a","into":"b"}`},
		{trackrec.Trash{ID: "a", Root: "r"},
			`{"id":"a","root":"r"}`},
		{trackrec.Restore{ID: "a"},
			`{"id":"a"}`},
		{trackrec.Purge{ID: "a"},
			`{"id":"a"}`},
		{trackrec.BulkUpdate{Project: "P", Items: []string{"a"}, AddTags: []string{"t"}, AddWatchers: []string{"w"}, Status: s("done"), Assignee: s("z")},
			`{"project":"P","items":["a"],"add_tags":["t"],"add_watchers":["w"],"status":"done","assignee":"z"}`},
		{trackrec.BulkUpdate{Project: "P"},
			`{"project":"P","items":null}`},
		{trackrec.EditComment{ID: "a", Comment: 4, Author: "x", Body: "b", Delete: true},
			`{"id":"a","comment":4,"author":"x","body":"b","delete":true}`},
		{trackrec.EditComment{ID: "a"},
			`{"id":"a","comment":0,"author":""}`},
		{trackrec.UpdateProject{Key: "K", Name: s("n"), Archived: &b},
			`{"key":"K","name":"n","archived":true}`},
		{trackrec.UpdateProject{Key: "K"},
			`{"key":"K"}`},
		{trackrec.EmptyTrash{Project: "P"},
			`{"project":"P"}`},
	} {
		got, err := json.Marshal(c.payload)
		if err != nil || string(got) != c.wire {
			t.Errorf("payload %d (%T) encodes %s (%v), want %s", i, c.payload, got, err, c.wire)
		}
	}
}

// TestSubjectsAndScopes: the tracker's subjects are under the subject
// tree the framework gives the domain, and an item's subject and scope
// name it back.
func TestSubjectsAndScopes(t *testing.T) {
	if want := statelog.SubjectPrefix(engine.DomainTracker); trackrec.SubjectPrefix != want {
		t.Fatalf("SubjectPrefix %q, the framework's %q", trackrec.SubjectPrefix, want)
	}
	if got := trackrec.ItemOfSubject(trackrec.ItemSubject("wi_a")); got != "wi_a" {
		t.Fatalf("the item of an item's subject: %q", got)
	}
	for _, s := range []string{trackrec.ProjectSubject("ENG"), trackrec.SubjectPrefix + "item.", "crewlet.pages.item.wi_a"} {
		if got := trackrec.ItemOfSubject(s); got != "" {
			t.Fatalf("ItemOfSubject(%q) = %q, want none", s, got)
		}
	}
	if id, ok := trackrec.ScopedItem(trackrec.ItemScope("wi_a")); !ok || id != "wi_a" {
		t.Fatalf("ScopedItem of an item's scope: %q %v", id, ok)
	}
	if _, ok := trackrec.ScopedItem(trackrec.ProjectScope("ENG")); ok {
		t.Fatal("a project's scope names an item")
	}
}

// TestPriorityRanks: a priority's rank is its place, least urgent first,
// and an unknown one ranks as none both ways.
func TestPriorityRanks(t *testing.T) {
	for i, p := range trackrec.Priorities {
		if trackrec.PriorityRank(p) != int64(i) || trackrec.PriorityName(int64(i)) != p {
			t.Fatalf("%s: rank %d, name of %d %q", p, trackrec.PriorityRank(p), i, trackrec.PriorityName(int64(i)))
		}
	}
	if trackrec.PriorityRank("asap") != 0 || trackrec.PriorityName(-1) != trackrec.PriorityNone || trackrec.PriorityName(99) != trackrec.PriorityNone {
		t.Fatal("an unknown priority or rank is not none")
	}
}

// TestEveryKindHasAFormatVersion: every tracker record kind declared here
// has a format-version decision in Kinds (a kind added without one fails
// here, before an older build could apply nothing for it), the lifecycle
// kinds that write rows are past format 2, and the purge stays at 1.
func TestEveryKindHasAFormatVersion(t *testing.T) {
	recordtest.EveryKindDecided(t, ".", trackrec.Kinds, trackrec.GateKinds)
	for _, k := range []string{trackrec.KindEditComment, trackrec.KindUpdateProject, trackrec.KindBulkSet} {
		if trackrec.Kinds[k] <= trackrec.FieldsFormat {
			t.Errorf("%s is stamped %d: a format-2 build does not know it and would apply nothing", k, trackrec.Kinds[k])
		}
	}
}

// TestMembershipIsTheFrameworks: a project membership entry is spelt with
// the framework's MemberPrefix, which is what lets a retained record about
// the project cover the items in it.
func TestMembershipIsTheFrameworks(t *testing.T) {
	if got, want := trackrec.InProject("ENG"), statelog.MemberPrefix+trackrec.ProjectScope("ENG"); got != want {
		t.Fatalf("InProject(ENG) = %q, want %q", got, want)
	}
}

// TestDistinct: repeats go, the first of each value keeps its place, and
// nothing given is an empty list (a record's field left out, not null).
func TestDistinct(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"b", "a", "b", "c", "a"}, []string{"b", "a", "c"}},
		{[]string{"x"}, []string{"x"}},
	} {
		if got := trackrec.Distinct(c.in); got == nil || !slices.Equal(got, c.want) {
			t.Errorf("Distinct(%q) = %#v, want %q", c.in, got, c.want)
		}
	}
}
