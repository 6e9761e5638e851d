package kb_test

import (
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/node"
)

func mustPatch(t *testing.T, svc *kb.Service, id string, p kb.PagePatch) kb.PageWrite {
	t.Helper()
	w, err := svc.UpdatePage(bg, engine.WriteOptions{}, id, 0, p)
	if err != nil || w.Outcome != engine.Applied || w.Page == nil {
		t.Fatalf("update %s %+v: %+v %v", id, p, w, err)
	}
	return w
}

func listed(t *testing.T, svc *kb.Service, space string) []string {
	t.Helper()
	l, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: space})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range l.Pages {
		ids = append(ids, p.ID)
	}
	return ids
}

// TestArchivedSpace: an archived space refuses a new page (and a page
// moved into it) with a sentence, publishing nothing; list_spaces leaves it
// out unless include_archived; get_space says it is archived; brought
// back, it takes pages again.
func TestArchivedSpace(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "OLD")
	mustSpace(t, svc, "NEW")
	pg := mustPage(t, svc, "NEW", "", "Stays", "")
	w, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "OLD", 0, kb.SpacePatch{Archived: ptr(true), Name: ptr("Old docs")})
	if err != nil || w.Space == nil || !w.Space.Archived || w.Space.Name != "Old docs" || w.Position == "" {
		t.Fatalf("archive: %+v %v", w, err)
	}
	if k := recordAt(t, n, seqOf(t, w.Position)).Kind; k != kbrec.KindArchiveSpace {
		t.Fatalf("archive record kind %s", k)
	}
	before := lastSeq(t, n)
	_, err = svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: "OLD", Title: "x"})
	refusedWith(t, err, engine.CodeInvalidArgument, "archived")
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, pg.ID, 0, kb.PagePatch{Space: ptr("OLD")})
	refusedWith(t, err, engine.CodeInvalidArgument, "archived")
	if lastSeq(t, n) != before {
		t.Fatal("a refused write published")
	}
	l, err := svc.ListSpacesPage(bg, lin(), kb.SpaceFilter{})
	if err != nil || len(l.Spaces) != 1 || l.Spaces[0].Key != "NEW" {
		t.Fatalf("list_spaces: %+v %v", l, err)
	}
	if l, _ = svc.ListSpacesPage(bg, lin(), kb.SpaceFilter{IncludeArchived: true}); len(l.Spaces) != 2 {
		t.Fatalf("include_archived: %+v", l.Spaces)
	}
	g, err := svc.GetSpace(bg, lin(), "OLD")
	if err != nil || !g.Space.Archived || g.SeenThrough.Seq < seqOf(t, w.Position) {
		t.Fatalf("get_space: %+v %v", g, err)
	}
	if _, err := svc.GetSpace(bg, lin(), "NOPE"); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("get_space of a missing space: %v", err)
	}
	if _, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "OLD", 0, kb.SpacePatch{Archived: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	mustPage(t, svc, "OLD", "", "Back", "")
}

// TestMoveAcrossSpaces: a page moved to another space carries its
// subtree (parents kept below it), lands under the parent it names there,
// and its old space lists none of them.
func TestMoveAcrossSpaces(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "ENG")
	mustSpace(t, svc, "OPS")
	keep := mustPage(t, svc, "ENG", "", "Stays", "")
	a := mustPage(t, svc, "ENG", "", "On-call", "")
	b := mustPage(t, svc, "ENG", a.ID, "Paging", "")
	c := mustPage(t, svc, "ENG", b.ID, "Escalation", "")
	home := mustPage(t, svc, "OPS", "", "Operations", "")
	w := mustPatch(t, svc, a.ID, kb.PagePatch{Space: ptr("OPS"), Parent: ptr(home.ID)})
	if w.Page.Space != "OPS" || w.Page.Parent != home.ID || w.Page.Version != seqOf(t, w.Position) || w.Message != "" {
		t.Fatalf("moved: %+v", w)
	}
	if k := recordAt(t, n, seqOf(t, w.Position)).Kind; k != kbrec.KindMovePage {
		t.Fatalf("move record kind %s", k)
	}
	for id, parent := range map[string]string{b.ID: a.ID, c.ID: b.ID} {
		got := mustGet(t, svc, id)
		if got.Space != "OPS" || got.Parent != parent || got.ScopedThrough != w.Page.Version {
			t.Fatalf("subtree page %s after the move: %+v", id, got)
		}
	}
	if ids := listed(t, svc, "ENG"); !slices.Equal(ids, []string{keep.ID}) {
		t.Fatalf("ENG lists %v", ids)
	}
	if ids := listed(t, svc, "OPS"); len(ids) != 4 {
		t.Fatalf("OPS lists %v", ids)
	}
	// A parent in another space than the one named is refused.
	_, err := svc.UpdatePage(bg, engine.WriteOptions{}, keep.ID, 0, kb.PagePatch{Space: ptr("OPS"), Parent: ptr(keep.ID)})
	refusedWith(t, err, engine.CodeInvalidArgument, "own parent")
}

// TestTrashAndRestore: trashing a page takes its subtree with it (out of
// listings, search and edits); restoring it brings back what it took,
// and nothing trashed apart from it.
func TestTrashAndRestore(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "DOCS")
	a := mustPage(t, svc, "DOCS", "", "Handbook", "")
	b := mustPage(t, svc, "DOCS", a.ID, "Zebra crossing", "")
	c := mustPage(t, svc, "DOCS", b.ID, "Leaf", "")
	d := mustPage(t, svc, "DOCS", b.ID, "Apart", "")
	mustPatch(t, svc, d.ID, kb.PagePatch{Trashed: ptr(true)})
	w := mustPatch(t, svc, b.ID, kb.PagePatch{Trashed: ptr(true)})
	if !w.Page.Trashed || recordAt(t, n, seqOf(t, w.Position)).Kind != kbrec.KindTrashPage {
		t.Fatalf("trash: %+v", w)
	}
	if got := mustGet(t, svc, c.ID); !got.Trashed || got.ScopedThrough != w.Page.Version {
		t.Fatalf("the subtree went with it? %+v", got)
	}
	if ids := listed(t, svc, "DOCS"); !slices.Equal(ids, []string{a.ID}) {
		t.Fatalf("listed with B in the trash: %v", ids)
	}
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "zebra"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("search finds a trashed page: %+v %v", res, err)
	}
	before := lastSeq(t, n)
	_, err := svc.UpdatePage(bg, engine.WriteOptions{}, c.ID, 0, kb.PagePatch{Title: ptr("x")})
	refusedWith(t, err, engine.CodeInvalidArgument, "trash")
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, c.ID, 0, kb.PagePatch{Trashed: ptr(false)})
	refusedWith(t, err, engine.CodeInvalidArgument, "restore "+b.ID)
	_, err = svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "x", Parent: b.ID})
	refusedWith(t, err, engine.CodeInvalidArgument, "trash")
	if lastSeq(t, n) != before {
		t.Fatal("a refused write published")
	}
	mustPatch(t, svc, b.ID, kb.PagePatch{Trashed: ptr(false)})
	if ids := listed(t, svc, "DOCS"); !slices.Equal(ids, []string{a.ID, b.ID, c.ID}) {
		t.Fatalf("after the restore: %v (want A, B, C; D stays in the trash)", ids)
	}
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "zebra"}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("search after the restore: %+v %v", res, err)
	}
	if !mustGet(t, svc, d.ID).Trashed {
		t.Fatal("restoring B restored D, trashed apart from it")
	}
}

// TestTitleLookup: get_page by title and space finds the live page of
// that title; two of the same title are refused naming both; none is
// not_found.
func TestTitleLookup(t *testing.T) {
	_, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "DOCS")
	pg := mustPage(t, svc, "DOCS", "", "Runbook", "Restart with care.")
	r, err := svc.FindPage(bg, lin(), kb.PageQuery{Title: "Runbook", Space: "DOCS"})
	if err != nil || r.Page.ID != pg.ID || r.Page.Body != "Restart with care." {
		t.Fatalf("by title: %+v %v", r, err)
	}
	_, err = svc.FindPage(bg, lin(), kb.PageQuery{Title: "Nope", Space: "DOCS"})
	refusedWith(t, err, engine.CodeNotFound, "search_knowledge")
	twin := mustPage(t, svc, "DOCS", "", "Runbook", "")
	_, err = svc.FindPage(bg, lin(), kb.PageQuery{Title: "Runbook", Space: "DOCS"})
	refusedWith(t, err, engine.CodeInvalidArgument, twin.ID)
	_, err = svc.FindPage(bg, lin(), kb.PageQuery{ID: pg.ID, Title: "Runbook"})
	refusedWith(t, err, engine.CodeInvalidArgument, "either id")
}
