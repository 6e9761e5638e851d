package kbrec_test

import (
	"encoding/json"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/record/recordtest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// TestPayloadsOnTheWire pins every payload's JSON as the records on a
// log hold it: a field renamed, reordered or given another omitempty is a
// record an older build reads otherwise.
func TestPayloadsOnTheWire(t *testing.T) {
	s := func(v string) *string { return &v }
	us := kbrec.UpdateSpace{Key: "K", Name: s("n"), PageTemplate: s("t"), Editing: s(kbrec.EditingLocked)}
	up := kbrec.UpdatePage{ID: "pg", Title: s("t"), Body: s("b"), Parent: s("")}
	for i, c := range []struct {
		payload any
		wire    string
	}{
		{kbrec.CreateSpace{Key: "K", Name: "n"},
			`{"key":"K","name":"n"}`},
		{us,
			`{"key":"K","name":"n","page_template":"t","editing":"locked"}`},
		{kbrec.UpdateSpace{Key: "K"},
			`{"key":"K"}`},
		{kbrec.CreatePage{ID: "pg", Space: "K", Parent: "p", Title: "t", Body: "b"},
			`{"id":"pg","space":"K","parent":"p","title":"t","body":"b"}`},
		{kbrec.CreatePage{ID: "pg"},
			`{"id":"pg","space":"","title":"","body":""}`},
		{up,
			`{"id":"pg","title":"t","body":"b","parent":""}`},
		{kbrec.UpdatePage{ID: "pg"},
			`{"id":"pg"}`},
		{kbrec.PurgePage{ID: "pg"},
			`{"id":"pg"}`},
		{kbrec.ArchiveSpace{UpdateSpace: us, Archived: true},
			`{"key":"K","name":"n","page_template":"t","editing":"locked","archived":true}`},
		{kbrec.ArchiveSpace{UpdateSpace: kbrec.UpdateSpace{Key: "K"}},
			`{"key":"K","archived":false}`},
		{kbrec.MovePage{UpdatePage: up, Space: "S"},
			`{"id":"pg","title":"t","body":"b","parent":"","space":"S"}`},
		{kbrec.MovePage{UpdatePage: kbrec.UpdatePage{ID: "pg"}, Space: "S"},
			`{"id":"pg","space":"S"}`},
		{kbrec.TrashPage{ID: "pg", Trashed: true},
			`{"id":"pg","trashed":true}`},
		{kbrec.TrashPage{ID: "pg"},
			`{"id":"pg","trashed":false}`},
		{kbrec.Comment{ID: "cm", Page: "pg", Author: "a", Body: "b", Delete: true},
			`{"id":"cm","page":"pg","author":"a","body":"b","delete":true}`},
		{kbrec.Comment{ID: "cm"},
			`{"id":"cm","page":"","author":""}`},
	} {
		got, err := json.Marshal(c.payload)
		if err != nil || string(got) != c.wire {
			t.Errorf("payload %d (%T) encodes %s (%v), want %s", i, c.payload, got, err, c.wire)
		}
	}
}

// TestSubjectsAndScopes: the knowledge base's subjects are under the
// subject tree the framework gives the domain, and a page's subject and
// scope name it back.
func TestSubjectsAndScopes(t *testing.T) {
	if want := statelog.SubjectPrefix(engine.DomainPages); kbrec.SubjectPrefix != want {
		t.Fatalf("SubjectPrefix %q, the framework's %q", kbrec.SubjectPrefix, want)
	}
	if id, ok := kbrec.PageOfSubject(kbrec.PageSubject("pg_a")); !ok || id != "pg_a" {
		t.Fatalf("the page of a page's subject: %q %v", id, ok)
	}
	for _, s := range []string{kbrec.SpaceSubject("DOCS"), kbrec.CommentSubject("cm_a"), "crewlet.tracker.page.pg_a"} {
		if id, ok := kbrec.PageOfSubject(s); ok {
			t.Fatalf("PageOfSubject(%q) = %q", s, id)
		}
	}
	if id, ok := kbrec.ScopedPage(kbrec.PageScope("pg_a")); !ok || id != "pg_a" {
		t.Fatalf("ScopedPage of a page's scope: %q %v", id, ok)
	}
	if _, ok := kbrec.ScopedPage(kbrec.SpaceScope("DOCS")); ok {
		t.Fatal("a space's scope names a page")
	}
}

// TestEveryKindHasAFormatVersion: every knowledge-base record kind has a
// format-version decision in Kinds, the lifecycle kinds are past format
// 2, and the page purge stays at 1.
func TestEveryKindHasAFormatVersion(t *testing.T) {
	recordtest.EveryKindDecided(t, ".", kbrec.Kinds, kbrec.GateKinds)
	for _, k := range []string{kbrec.KindArchiveSpace, kbrec.KindMovePage, kbrec.KindTrashPage, kbrec.KindComment} {
		if kbrec.Kinds[k] < kbrec.LifecycleFormat || kbrec.LifecycleFormat <= 2 {
			t.Errorf("%s is stamped %d: a format-2 build does not know it and would apply nothing", k, kbrec.Kinds[k])
		}
	}
}
