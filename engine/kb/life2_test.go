package kb_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/node"
)

// TestPageVersions: every record of a page's own is a version, listed
// newest first with who wrote it and its position (the write's answer's),
// paged by cursor; get_page at a version reads the page as it stood.
func TestPageVersions(t *testing.T) {
	_, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "DOCS")
	ctx := engine.WithActor(bg, "seat:ana")
	cw, err := svc.CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Runbook", Body: "one"})
	if err != nil {
		t.Fatal(err)
	}
	id := cw.Page.ID
	u1 := mustPatch(t, svc, id, kb.PagePatch{Body: ptr("two")})
	u2 := mustPatch(t, svc, id, kb.PagePatch{Title: ptr("Runbook v3"), Body: ptr("three")})
	var got []kb.PageVersion
	cursor := ""
	for range 3 {
		l, err := svc.ListPageVersions(bg, lin(), id, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Versions...)
		if cursor = l.NextCursor; cursor == "" {
			break
		}
	}
	want := []string{u2.Position, u1.Position, cw.Position}
	if len(got) != 3 {
		t.Fatalf("versions %+v", got)
	}
	for i, v := range got {
		if v.Position != want[i] || v.Version != seqOf(t, want[i]) {
			t.Fatalf("version %d is %+v, want position %s", i, v, want[i])
		}
	}
	if got[2].By != "seat:ana" || got[2].Kind != kbrec.KindCreatePage || got[0].Title != "Runbook v3" {
		t.Fatalf("who and what: %+v", got)
	}
	old, err := svc.FindPage(bg, lin(), kb.PageQuery{ID: id, Version: seqOf(t, cw.Position)})
	if err != nil || old.Page.Body != "one" || old.Page.Title != "Runbook" || old.Page.Version != seqOf(t, cw.Position) {
		t.Fatalf("version 1: %+v %v", old.Page, err)
	}
	_, err = svc.FindPage(bg, lin(), kb.PageQuery{ID: id, Version: seqOf(t, cw.Position) + 1000})
	refusedWith(t, err, engine.CodeNotFound, "list_page_versions")
}

// TestPageComments: a comment is its author's: edited and deleted by it,
// refused to another seat, listed by get_page, retried under its op id
// answered from the first copy, and never moves the page's version.
func TestPageComments(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "DOCS")
	pg := mustPage(t, svc, "DOCS", "", "Runbook", "")
	ana, bob := engine.WithActor(bg, "seat:ana"), engine.WithActor(bg, "seat:bob")
	w, err := svc.CommentOnPage(ana, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, Body: "Needs a diagram."})
	if err != nil || w.Comment == nil || w.Comment.Author != "seat:ana" || w.Position == "" {
		t.Fatalf("comment: %+v %v", w, err)
	}
	again, err := svc.CommentOnPage(ana, engine.WriteOptions{OpID: w.OpID}, kb.CommentEdit{Page: pg.ID, Body: "Needs a diagram."})
	if err != nil || again.Position != w.Position || again.Comment == nil || again.Comment.ID != w.Comment.ID {
		t.Fatalf("retried comment: %+v %v", again, err)
	}
	cid := w.Comment.ID
	before := lastSeq(t, n)
	_, err = svc.CommentOnPage(bob, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, ID: cid, Body: "Mine now."})
	refusedWith(t, err, engine.CodeInvalidArgument, "only its author")
	_, err = svc.CommentOnPage(bob, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, ID: cid, Delete: true})
	refusedWith(t, err, engine.CodeInvalidArgument, "only its author")
	if lastSeq(t, n) != before {
		t.Fatal("a refused edit published")
	}
	e, err := svc.CommentOnPage(ana, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, ID: cid, Body: "Needs two diagrams."})
	if err != nil || e.Comment == nil || e.Comment.Body != "Needs two diagrams." || e.Comment.Version != seqOf(t, e.Position) {
		t.Fatalf("edit: %+v %v", e, err)
	}
	if _, err := svc.CommentOnPage(bob, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, Body: "Agreed."}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.GetPage(bg, lin(), pg.ID)
	if err != nil || len(r.Comments) != 2 || r.Comments[0].Body != "Needs two diagrams." || r.Comments[1].Author != "seat:bob" {
		t.Fatalf("get_page comments: %+v %v", r.Comments, err)
	}
	if r.Page.Version != pg.Version {
		t.Fatalf("comments moved the page's version from %d to %d", pg.Version, r.Page.Version)
	}
	d, err := svc.CommentOnPage(ana, engine.WriteOptions{}, kb.CommentEdit{Page: pg.ID, ID: cid, Delete: true})
	if err != nil || d.Comment != nil || d.Outcome != engine.Applied {
		t.Fatalf("delete: %+v %v", d, err)
	}
	if r, _ := svc.GetPage(bg, lin(), pg.ID); len(r.Comments) != 1 {
		t.Fatalf("after the delete: %+v", r.Comments)
	}
}

// TestPagedListings: list_pages and list_spaces page by cursor; a page
// and a space created between two pages of the listing neither skip nor
// repeat a row; a later page reads at least at the first page's position;
// a cursor brought to another query is refused. search_knowledge pages
// without repeating a hit.
func TestPagedListings(t *testing.T) {
	_, svc := openNode(t, node.Config{})
	for _, k := range []string{"BB", "DD", "FF"} {
		mustSpace(t, svc, k)
	}
	var want []string
	for i := range 5 {
		want = append(want, mustPage(t, svc, "BB", "", fmt.Sprintf("Alpha page %d", i), "alpha").ID)
	}
	first, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "BB", Limit: 2})
	if err != nil || len(first.Pages) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	want = append(want, mustPage(t, svc, "BB", "", "Alpha late", "alpha").ID)
	got := []string{first.Pages[0].ID, first.Pages[1].ID}
	for cursor := first.NextCursor; cursor != ""; {
		l, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "BB", Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if l.SeenThrough.Seq < first.SeenThrough.Seq {
			t.Fatalf("a later page read at %v, behind the first page's %v", l.SeenThrough, first.SeenThrough)
		}
		for _, p := range l.Pages {
			got = append(got, p.ID)
		}
		cursor = l.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	_, err = svc.ListPages(bg, lin(), kb.PageFilter{Space: "DD", Limit: 2, Cursor: first.NextCursor})
	refusedWith(t, err, engine.CodeInvalidArgument, "another query")
	_, err = svc.ListSpacesPage(bg, lin(), kb.SpaceFilter{Limit: 2, Cursor: first.NextCursor})
	refusedWith(t, err, engine.CodeInvalidArgument, "another query")
	pagedSpaces(t, svc)
	pagedSearch(t, svc)
}

func pagedSpaces(t *testing.T, svc *kb.Service) {
	s1, err := svc.ListSpacesPage(bg, lin(), kb.SpaceFilter{Limit: 2})
	if err != nil || len(s1.Spaces) != 2 || s1.Spaces[1].Key != "DD" || s1.NextCursor == "" {
		t.Fatalf("spaces page 1: %+v %v", s1, err)
	}
	mustSpace(t, svc, "CC") // before the cursor's end: not shown, shifts nothing
	mustSpace(t, svc, "EE") // after it: shown once
	s2, err := svc.ListSpacesPage(bg, lin(), kb.SpaceFilter{Limit: 2, Cursor: s1.NextCursor})
	if err != nil || len(s2.Spaces) != 2 || s2.Spaces[0].Key != "EE" || s2.Spaces[1].Key != "FF" || s2.NextCursor != "" {
		t.Fatalf("spaces page 2: %+v %v", s2, err)
	}
}

func pagedSearch(t *testing.T, svc *kb.Service) {
	seen := map[string]bool{}
	cursor := ""
	for {
		r, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "alpha", Limit: 4, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Hits {
			if seen[h.ID] {
				t.Fatalf("hit %s repeated", h.ID)
			}
			seen[h.ID] = true
		}
		if cursor == "" {
			// Between the first page and the next, a page that would
			// rank first: later pages rank the pages the first saw.
			mustPage(t, svc, "BB", "", "Alpha alpha alpha", "alpha alpha")
		}
		if cursor = r.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 6 {
		t.Fatalf("search paged %d hits, want the 6 there when the first page was read", len(seen))
	}
	_, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "beta", Cursor: "e30"})
	refusedWith(t, err, engine.CodeInvalidArgument, "cursor")
}
