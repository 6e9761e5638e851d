package kb_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/kb/kbapply"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// TestSpacesAndPagesCRUD: spaces and pages over a real node (embedded
// broker, SQLite file), with their versions, if_match, a retried create
// and pagination.
func TestSpacesAndPagesCRUD(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	spaceCRUD(t, svc)
	pg := createPageRetried(t, n, svc)
	child := mustPage(t, svc, "DOCS", pg.ID, "Restarting a node", "Stop it, then start it.")
	pageUpdateAndStale(t, n, svc, pg, child)
	pageListings(t, svc, pg, child)
}

// spaceCRUD files DOCS, refuses a second DOCS, sets its page template and
// refuses an update against the version before that.
func spaceCRUD(t *testing.T, svc *kb.Service) {
	sp := mustSpace(t, svc, "DOCS")
	if sp.Name != "DOCS space" || sp.Editing != kb.EditingOpen || sp.Version == 0 {
		t.Fatalf("space %+v", sp)
	}
	if _, err := svc.CreateSpace(bg, engine.WriteOptions{}, "DOCS", "again"); engine.CodeOf(err) != engine.CodeAlreadyExists {
		t.Fatalf("second DOCS: %v", err)
	}
	sw, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "DOCS", sp.Version, kb.SpacePatch{PageTemplate: ptr("## Summary\n\n## Details\n")})
	if err != nil || sw.Space == nil || sw.Space.PageTemplate == "" {
		t.Fatalf("update space: %+v %v", sw, err)
	}
	if _, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "DOCS", sp.Version, kb.SpacePatch{Name: ptr("x")}); engine.CodeOf(err) != engine.CodeStale {
		t.Fatalf("stale space update: %v", err)
	}
}

// createPageRetried creates a page from the space's template and creates
// it again under the same operation: the first copy's page, one row.
func createPageRetried(t *testing.T, n *node.Node, svc *kb.Service) kb.Page {
	w, err := svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Runbook"})
	if err != nil || w.Outcome != engine.Applied || w.Page == nil {
		t.Fatalf("create: %+v %v", w, err)
	}
	pg := *w.Page
	if pg.Body != "## Summary\n\n## Details\n" || pg.Version != seqOf(t, w.Position) || pg.Parent != "" || pg.Space != "DOCS" {
		t.Fatalf("page from the template: %+v", pg)
	}
	// The same operation again answers the first copy's page.
	again, err := svc.CreatePage(bg, engine.WriteOptions{OpID: w.OpID}, kb.NewPage{Space: "DOCS", Title: "Runbook"})
	if err != nil || again.Page == nil || again.Page.ID != pg.ID || again.Position != w.Position {
		t.Fatalf("retried create: %+v %v", again, err)
	}
	if c := count(t, n, `SELECT count(*) FROM kb_pages`); c != 1 {
		t.Fatalf("%d pages after a retried create", c)
	}
	return pg
}

// pageUpdateAndStale reads pg's child, updates it against its version,
// then refuses an update against the version before, publishing nothing.
func pageUpdateAndStale(t *testing.T, n *node.Node, svc *kb.Service, pg, child kb.Page) {
	got := mustGet(t, svc, child.ID)
	if got.Parent != pg.ID || got.Body != "Stop it, then start it." {
		t.Fatalf("get: %+v", got)
	}
	u, err := svc.UpdatePage(bg, engine.WriteOptions{}, child.ID, got.Version, kb.PagePatch{Body: ptr("Drain it first.")})
	if err != nil || u.Page == nil || u.Page.Body != "Drain it first." || u.Page.Version <= got.Version || u.Page.Title != got.Title {
		t.Fatalf("update: %+v %v", u, err)
	}
	before := lastSeq(t, n)
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, child.ID, got.Version, kb.PagePatch{Title: ptr("x")})
	r := refusedWith(t, err, engine.CodeStale, "version")
	if r.Fields["current_version"] != u.Page.Version {
		t.Fatalf("stale names %v, want the current version %d", r.Fields["current_version"], u.Page.Version)
	}
	if lastSeq(t, n) != before {
		t.Fatal("a stale update published")
	}
}

// pageListings adds five top-level pages and lists the space three at a
// time in creation order, its top level, pg's children and the spaces.
func pageListings(t *testing.T, svc *kb.Service, pg, child kb.Page) {
	for i := 0; i < 5; i++ {
		mustPage(t, svc, "DOCS", "", "Filler", "")
	}
	var ids []string
	cursor := ""
	for {
		l, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS", Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if l.Level != engine.Linearizable || !l.Complete {
			t.Fatalf("list head %+v", l.ReadInfo)
		}
		for _, p := range l.Pages {
			ids = append(ids, p.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(ids) != 7 || ids[0] != pg.ID || ids[1] != child.ID {
		t.Fatalf("paged listing %v", ids)
	}
	top, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS", Parent: ptr("")})
	if err != nil || len(top.Pages) != 6 {
		t.Fatalf("top level: %d %v", len(top.Pages), err)
	}
	kids, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS", Parent: ptr(pg.ID)})
	if err != nil || len(kids.Pages) != 1 || kids.Pages[0].ID != child.ID {
		t.Fatalf("children: %+v %v", kids.Pages, err)
	}
	if top.Pages[0].Children != 1 {
		t.Fatalf("child count %+v", top.Pages[0])
	}
	spaces, err := svc.ListSpaces(bg, lin())
	if err != nil || len(spaces.Spaces) != 1 || spaces.Spaces[0].Pages != 7 {
		t.Fatalf("spaces %+v %v", spaces, err)
	}
}

// TestTreeMovesAndCycles: a move re-parents within the space, a move
// under the page's own subtree is refused before anything is published,
// and two moves decided apart that would close a cycle between them leave
// the tree acyclic when they apply.
func TestTreeMovesAndCycles(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "ENG")
	mustSpace(t, svc, "OPS")
	a := mustPage(t, svc, "ENG", "", "A", "")
	b := mustPage(t, svc, "ENG", a.ID, "B", "")
	c := mustPage(t, svc, "ENG", b.ID, "C", "")
	other := mustPage(t, svc, "OPS", "", "Elsewhere", "")

	before := lastSeq(t, n)
	_, err := svc.UpdatePage(bg, engine.WriteOptions{}, a.ID, a.Version, kb.PagePatch{Parent: ptr(c.ID)})
	refusedWith(t, err, engine.CodeInvalidArgument, "cycle")
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, a.ID, a.Version, kb.PagePatch{Parent: ptr(a.ID)})
	refusedWith(t, err, engine.CodeInvalidArgument, "own parent")
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, a.ID, a.Version, kb.PagePatch{Parent: ptr(other.ID)})
	refusedWith(t, err, engine.CodeInvalidArgument, "update_page space moves it")
	if lastSeq(t, n) != before {
		t.Fatal("a refused move published")
	}

	// C to the top, then A under C: legal now.
	mustUpdate(t, svc, c.ID, kb.PagePatch{Parent: ptr("")})
	moved := mustUpdate(t, svc, a.ID, kb.PagePatch{Parent: ptr(c.ID)})
	if moved.Parent != c.ID || parentOf(t, svc, b.ID) != a.ID {
		t.Fatalf("after moves: A under %q, B under %q", moved.Parent, parentOf(t, svc, b.ID))
	}

	// Two writers each decided a move that is fine alone: X under Y and Y
	// under X. Both land; the second to apply must not close the cycle.
	x := mustPage(t, svc, "ENG", "", "X", "")
	y := mustPage(t, svc, "ENG", "", "Y", "")
	scope := func(id string) []string { return []string{"space:ENG", "page:" + id} }
	publishRaw(t, n, "n1", kbrec.KindUpdatePage, kbrec.PageSubject(x.ID), scope(x.ID), map[string]any{"id": x.ID, "parent": y.ID, "title": "X moved"})
	publishRaw(t, n, "n1", kbrec.KindUpdatePage, kbrec.PageSubject(y.ID), scope(y.ID), map[string]any{"id": y.ID, "parent": x.ID, "title": "Y moved"})
	gx, gy := mustGet(t, svc, x.ID), mustGet(t, svc, y.ID)
	if gx.Parent != y.ID || gy.Parent != "" || gy.Title != "Y moved" {
		t.Fatalf("concurrent moves: X under %q, Y under %q (%q)", gx.Parent, gy.Parent, gy.Title)
	}
	// The service says so when its own move is the one not taken.
	z := mustPage(t, svc, "ENG", "", "Z", "")
	w, err := svc.UpdatePage(bg, engine.WriteOptions{}, z.ID, z.Version, kb.PagePatch{Parent: ptr(x.ID)})
	if err != nil || w.Page.Parent != x.ID || w.Message != "" {
		t.Fatalf("plain move: %+v %v", w, err)
	}
}

// TestPurgeRefilesChildrenAndGatesLaterRecords: a purge destroys the page
// and its search entry, re-files its children under its parent (their
// scoped_through carrying the purge, their version unchanged), declares
// the whole space as its scope, and every later record about the page
// applies nowhere — including one a stale writer publishes after it.
func TestPurgeRefilesChildrenAndGatesLaterRecords(t *testing.T) {
	rec := enginetest.NewRecorder()
	n, svc := openNode(t, node.Config{Logger: rec.Logger()})
	mustSpace(t, svc, "DOCS")
	root := mustPage(t, svc, "DOCS", "", "Handbook", "")
	doomed := mustPage(t, svc, "DOCS", root.ID, "Obsolete zebra procedure", "zebra crossing")
	c1 := mustPage(t, svc, "DOCS", doomed.ID, "Child one", "")
	c2 := mustPage(t, svc, "DOCS", doomed.ID, "Child two", "")
	grand := mustPage(t, svc, "DOCS", c1.ID, "Grandchild", "")

	pw, err := svc.PurgePage(bg, engine.WriteOptions{}, doomed.ID)
	if err != nil || pw.Outcome != engine.Applied {
		t.Fatalf("purge: %+v %v", pw, err)
	}
	purgeSeq := seqOf(t, pw.Position)
	if pw.Space != "DOCS" || pw.RefiledTo != root.ID || !slices.Equal(pw.Refiled, []string{c1.ID, c2.ID}) {
		t.Fatalf("purge answer %+v", pw)
	}
	if r := recordAt(t, n, purgeSeq); !slices.Contains(r.Scope, "space:DOCS") {
		t.Fatalf("purge scope %v does not cover the space", r.Scope)
	}
	for _, c := range []kb.Page{c1, c2} {
		g := mustGet(t, svc, c.ID)
		if g.Parent != root.ID || g.ScopedThrough != purgeSeq || g.Version != c.Version {
			t.Fatalf("re-filed child %+v (was version %d)", g, c.Version)
		}
	}
	if g := mustGet(t, svc, grand.ID); g.Parent != c1.ID || g.ScopedThrough == purgeSeq {
		t.Fatalf("grandchild %+v", g)
	}
	purgedPageGone(t, n, svc, pw, doomed)
	staleRecordsGated(t, n, rec, doomed)
	payloadsNamingItApplyNowhere(t, n, svc, doomed)
}

// purgedPageGone: the purged page reads deleted and is not found by
// search; the purge retried is answered from the ledger, and fresh writes
// about the page are refused deleted, publishing nothing.
func purgedPageGone(t *testing.T, n *node.Node, svc *kb.Service, pw kb.PurgeWrite, doomed kb.Page) {
	purgeSeq := seqOf(t, pw.Position)
	_, err := svc.GetPage(bg, lin(), doomed.ID)
	if r := refusedWith(t, err, engine.CodeDeleted, "purged"); r.Position == nil || r.Position.Seq != purgeSeq {
		t.Fatalf("deleted refusal names %v, want the purge at %d", r.Position, purgeSeq)
	}
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "zebra"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("purged page still found: %+v %v", res.Hits, err)
	}
	// Retried under its id: answered from the ledger, nothing published.
	before := lastSeq(t, n)
	again, err := svc.PurgePage(bg, engine.WriteOptions{OpID: pw.OpID}, doomed.ID)
	if err != nil || again.Outcome != engine.Applied || again.Position != pw.Position {
		t.Fatalf("retried purge: %+v %v", again, err)
	}
	// A fresh write about the page is refused deleted before publishing.
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, doomed.ID, doomed.Version, kb.PagePatch{Title: ptr("back")})
	refusedWith(t, err, engine.CodeDeleted, "purged")
	_, err = svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Parent: doomed.ID, Title: "under the dead"})
	refusedWith(t, err, engine.CodeDeleted, "purged")
	if lastSeq(t, n) != before {
		t.Fatal("a write about a purged page published")
	}
}

// staleRecordsGated: records about the purged page decided before the
// purge land after it and are held by the deletion gate, with their
// statelog_gated row and log lines.
func staleRecordsGated(t *testing.T, n *node.Node, rec *enginetest.Recorder, doomed kb.Page) {
	// A stale writer that decided before the purge publishes after it: a
	// resurrecting update and a create under the purged page.
	staleSeq := publishRaw(t, n, "n2", kbrec.KindUpdatePage, kbrec.PageSubject(doomed.ID), []string{"space:DOCS", "page:" + doomed.ID},
		map[string]any{"id": doomed.ID, "title": "Resurrected zebra", "body": "zebra"})
	if c := count(t, n, `SELECT count(*) FROM kb_pages WHERE id = ?`, doomed.ID); c != 0 {
		t.Fatal("the purged page came back")
	}
	if c := count(t, n, `SELECT count(*) FROM statelog_gated WHERE domain = 'pages' AND seq = ? AND gate = 'deleted' AND writer = 'n2'`, staleSeq); c != 1 {
		t.Fatal("the stale record is not in statelog_gated under deleted")
	}
	lines := rec.Lines(engine.EvRecordGated)
	if len(lines) < 1 || lines[0].Attrs[engine.LogGate] != kbapply.GateDeleted || lines[0].Attrs[engine.LogWriter] != "n2" ||
		lines[0].Attrs[engine.LogComponent] != engine.ComponentStatelog || lines[0].Attrs[engine.LogDomain] != "pages" {
		t.Fatalf("statelog_record_gated lines %+v", lines)
	}
	// A write this node decided as if the purge had not happened (the
	// decision a node behind the purge makes) lands and is refused deleted
	// under the gate that holds its record.
	op, err := ledger.MintFor(time.Now(), "update_page", doomed.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.Replica(engine.DomainPages).Write(bg, statelog.Op{ID: op, Digest: "stale-decision", Vouched: true}, func(context.Context, *sql.Tx) (*statelog.Proposal, error) {
		return &statelog.Proposal{Kind: kbrec.KindUpdatePage, Subject: kbrec.PageSubject(doomed.ID), Scope: []string{"space:DOCS", "page:" + doomed.ID},
			Payload: map[string]any{"id": doomed.ID, "title": "stale decision"}}, nil
	})
	// deleted names no writer: the purge refuses this node's own write as
	// it did the copy's, on every retry.
	if r := refusedWith(t, err, engine.CodeDeleted, "applies nowhere"); r.Position == nil || r.Position.Seq <= staleSeq || r.Fields["writer"] != nil {
		t.Fatalf("gated write refusal %+v", r)
	}
	if l := rec.Lines(engine.EvWriteGated); len(l) != 1 || l[0].Attrs[engine.LogGate] != kbapply.GateDeleted ||
		l[0].Attrs["subject"] != kbrec.PageSubject(doomed.ID) || l[0].Attrs[engine.LogDomain] != "pages" {
		t.Fatalf("statelog_write_gated lines %+v", l)
	}
	if c := count(t, n, `SELECT count(*) FROM kb_pages WHERE id = ?`, doomed.ID); c != 0 {
		t.Fatal("the purged page came back")
	}
}

// payloadsNamingItApplyNowhere: records on other subjects that name the
// purged page in their payload neither bring it back nor file under it.
func payloadsNamingItApplyNowhere(t *testing.T, n *node.Node, svc *kb.Service, doomed kb.Page) {
	// A record on another subject naming the purged page in its payload
	// (a buggy or hostile writer) does not bring it back either.
	publishRaw(t, n, "n2", kbrec.KindCreatePage, kbrec.PageSubject("pg_0000000000000000000000000000cafe"), nil,
		map[string]any{"id": doomed.ID, "space": "DOCS", "title": "Obsolete zebra procedure", "body": "zebra"})
	if c := count(t, n, `SELECT count(*) FROM kb_pages WHERE id = ?`, doomed.ID); c != 0 {
		t.Fatal("a create on another subject resurrected the purged page")
	}

	// A create whose parent was purged between decision and apply is filed
	// at the top of the space rather than orphaned.
	orphanID := "pg_0000000000000000000000000000beef"
	publishRaw(t, n, "n2", kbrec.KindCreatePage, kbrec.PageSubject(orphanID), []string{"space:DOCS", "page:" + orphanID},
		map[string]any{"id": orphanID, "space": "DOCS", "parent": doomed.ID, "title": "late child", "body": ""})
	if g := mustGet(t, svc, orphanID); g.Parent != "" {
		t.Fatalf("late child filed under %q", g.Parent)
	}
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "zebra"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("gated record reached the index: %+v %v", res.Hits, err)
	}
}

// TestSettingsCoverEveryPage: a settings record declares the whole space
// as its scope and every page's scoped_through carries it, while their
// versions stay; locking refuses edits before anything is published.
func TestSettingsCoverEveryPage(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	sp := mustSpace(t, svc, "DOCS")
	mustSpace(t, svc, "OTHER")
	p1 := mustPage(t, svc, "DOCS", "", "One", "")
	p2 := mustPage(t, svc, "DOCS", p1.ID, "Two", "")
	o := mustPage(t, svc, "OTHER", "", "Unrelated", "")

	w, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "DOCS", sp.Version, kb.SpacePatch{Editing: ptr(kb.EditingLocked)})
	if err != nil || w.Space == nil || w.Space.Editing != kb.EditingLocked {
		t.Fatalf("lock: %+v %v", w, err)
	}
	seq := seqOf(t, w.Position)
	if r := recordAt(t, n, seq); !slices.Equal(r.Scope, []string{"space:DOCS"}) || r.Subject != "crewlet.pages.space.DOCS" {
		t.Fatalf("settings record subject %s scope %v", r.Subject, r.Scope)
	}
	if w.Space.SettingsThrough != seq || w.Space.Version != seq {
		t.Fatalf("space after settings %+v", w.Space)
	}
	for _, p := range []kb.Page{p1, p2} {
		g := mustGet(t, svc, p.ID)
		if g.ScopedThrough != seq || g.Version != p.Version || g.Editing != kb.EditingLocked {
			t.Fatalf("page %+v after the settings record at %d", g, seq)
		}
	}
	l, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS"})
	if err != nil || l.Pages[0].ScopedThrough != seq {
		t.Fatalf("listing %+v %v", l.Pages, err)
	}
	if g := mustGet(t, svc, o.ID); g.ScopedThrough >= seq {
		t.Fatalf("a page of another space carries the settings record: %+v", g)
	}
	before := lastSeq(t, n)
	_, err = svc.UpdatePage(bg, engine.WriteOptions{}, p1.ID, p1.Version, kb.PagePatch{Title: ptr("x")})
	refusedWith(t, err, engine.CodeInvalidArgument, "locked")
	_, err = svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "x"})
	refusedWith(t, err, engine.CodeInvalidArgument, "locked")
	if lastSeq(t, n) != before {
		t.Fatal("a locked space took a record")
	}
	// A rename is not a settings record: the pages' scoped_through stays.
	w2, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "DOCS", 0, kb.SpacePatch{Name: ptr("Documentation")})
	if err != nil || w2.Space.SettingsThrough != seq {
		t.Fatalf("rename: %+v %v", w2.Space, err)
	}
}

// TestSearch: words in titles and bodies are found, title matches rank
// first, user text is quoted (no syntax reaches FTS5), snippets mark the
// match, the index follows edits in the same transaction, and the answer
// says it carries no read-your-writes floor.
func TestSearch(t *testing.T) {
	_, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "ENG")
	mustSpace(t, svc, "OPS")
	bodyHeavy := mustPage(t, svc, "ENG", "", "Operations notes", strings.Repeat("the failover drill covers failover of failover nodes. ", 20))
	titled := mustPage(t, svc, "ENG", "", "Failover", "A short page.")
	nodeThree := mustPage(t, svc, "OPS", "", "Restart node-3 safely", "Drain node-3, then restart it.")
	for i := 0; i < 20; i++ {
		mustPage(t, svc, "ENG", "", "Filler page", "nothing to see here about weather")
	}

	res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "failover"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 2 || res.Hits[0].ID != titled.ID || !res.Hits[0].TitleMatch || res.Hits[1].ID != bodyHeavy.ID || res.Hits[1].TitleMatch {
		t.Fatalf("ranking %+v", res.Hits)
	}
	if !strings.Contains(res.Hits[1].Snippet, "**failover**") {
		t.Fatalf("snippet %q", res.Hits[1].Snippet)
	}
	if res.Note != kb.SearchNote || !strings.Contains(res.Note, "no read-your-writes floor") || res.Level != engine.Linearizable {
		t.Fatalf("head %+v", res.ReadInfo)
	}
	// Stemming: drills finds drill.
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "drills"}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("stemmed: %+v %v", res.Hits, err)
	}
	// Text that is FTS5 syntax is searched as words.
	for _, q := range []string{"node-3", `"node-3`, "restart:", "(safely", "safe*", "{safely}", "drain)", "restart ^", "node-3, then", "rest*"} {
		res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: q})
		if err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
		if len(res.Hits) != 1 || res.Hits[0].ID != nodeThree.ID {
			t.Fatalf("query %q: %+v", q, res.Hits)
		}
	}
	// Column filters and operators are never parsed as such: no error.
	for _, q := range []string{"body:restart", "title : x", "node AND", "NOT restart", "restart OR", "a OR b NOT c", `x" OR "y`, "rank:1", "*", "^x"} {
		if _, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: q}); err != nil && engine.CodeOf(err) != engine.CodeInvalidArgument {
			t.Fatalf("query %q: %v", q, err)
		}
	}
	_, err = svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "-- ** ()"})
	refusedWith(t, err, engine.CodeInvalidArgument, "no word")
	// Space filter.
	if res, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "restart", Space: "ENG"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("space filter: %+v %v", res.Hits, err)
	}
	_, err = svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "restart", Space: "NOPE"})
	refusedWith(t, err, engine.CodeNotFound, "NOPE")
	// The index follows an edit: the old word is gone, the new one found.
	mustUpdate(t, svc, nodeThree.ID, kb.PagePatch{Title: ptr("Reboot the gateway"), Body: ptr("Power cycle.")})
	if res, _ := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "node-3"}); len(res.Hits) != 0 {
		t.Fatalf("stale index: %+v", res.Hits)
	}
	if res, _ := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "gateway"}); len(res.Hits) != 1 || !res.Hits[0].TitleMatch {
		t.Fatalf("updated index: %+v", res.Hits)
	}
	// A floor is not waited for: a min_position far ahead is dropped.
	far := engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 1 << 40}
	if _, err := svc.SearchKnowledge(bg, engine.ReadOptions{Level: engine.Stale, MinPosition: &far}, kb.SearchQuery{Query: "gateway"}); err != nil {
		t.Fatalf("search waited for a floor: %v", err)
	}
}

// TestBadInputIsRefusedAndPublishesNothing: every malformed call is an
// invalid_argument refusal with a sentence, and the pages log does not
// move.
func TestBadInputIsRefusedAndPublishesNothing(t *testing.T) {
	n, svc := openNode(t, node.Config{})
	mustSpace(t, svc, "DOCS")
	p := mustPage(t, svc, "DOCS", "", "Page", "")
	w := engine.WriteOptions{}
	long := strings.Repeat("x", kb.MaxTitleBytes+1)
	cases := []struct {
		name    string
		code    engine.Code
		mention string
		call    func() error
	}{
		{"lower-case space key", engine.CodeInvalidArgument, "space key", func() error { _, err := svc.CreateSpace(bg, w, "docs", "x"); return err }},
		{"one-letter space key", engine.CodeInvalidArgument, "space key", func() error { _, err := svc.CreateSpace(bg, w, "D", "x"); return err }},
		{"empty space name", engine.CodeInvalidArgument, "name", func() error { _, err := svc.CreateSpace(bg, w, "ENG", " "); return err }},
		{"update space nothing", engine.CodeInvalidArgument, "nothing to update", func() error { _, err := svc.UpdateSpace(bg, w, "DOCS", 0, kb.SpacePatch{}); return err }},
		{"bad editing", engine.CodeInvalidArgument, "editing", func() error {
			_, err := svc.UpdateSpace(bg, w, "DOCS", 0, kb.SpacePatch{Editing: ptr("frozen")})
			return err
		}},
		{"unknown space", engine.CodeNotFound, "NOPE", func() error { _, err := svc.UpdateSpace(bg, w, "NOPE", 0, kb.SpacePatch{Name: ptr("x")}); return err }},
		{"empty title", engine.CodeInvalidArgument, "title", func() error { _, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: ""}); return err }},
		{"long title", engine.CodeInvalidArgument, "bytes", func() error { _, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: long}); return err }},
		{"huge body", engine.CodeInvalidArgument, "bytes", func() error {
			_, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: "t", Body: strings.Repeat("b", kb.MaxBodyBytes+1)})
			return err
		}},
		{"invalid utf-8", engine.CodeInvalidArgument, "UTF-8", func() error { _, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: "\xff"}); return err }},
		{"malformed parent", engine.CodeInvalidArgument, "page id", func() error {
			_, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: "t", Parent: "../x"})
			return err
		}},
		{"unknown parent", engine.CodeNotFound, "does not exist", func() error {
			_, err := svc.CreatePage(bg, w, kb.NewPage{Space: "DOCS", Title: "t", Parent: "pg_00000000000000000000000000000001"})
			return err
		}},
		{"unknown space page", engine.CodeNotFound, "NOPE", func() error { _, err := svc.CreatePage(bg, w, kb.NewPage{Space: "NOPE", Title: "t"}); return err }},
		{"malformed page id", engine.CodeInvalidArgument, "page id", func() error { _, err := svc.GetPage(bg, lin(), "ENG-1"); return err }},
		{"update nothing", engine.CodeInvalidArgument, "nothing to update", func() error { _, err := svc.UpdatePage(bg, w, p.ID, p.Version, kb.PagePatch{}); return err }},
		{"op_id of another write", engine.CodeOpReused, "fresh id", func() error {
			_, err := svc.UpdatePage(bg, engine.WriteOptions{OpID: "0193a1b2-0000-7000-8000-000000000000.create_page-DOCS"}, p.ID, p.Version, kb.PagePatch{Title: ptr("x")})
			return err
		}},
		{"garbage op_id", engine.CodeInvalidArgument, "op_id", func() error {
			_, err := svc.PurgePage(bg, engine.WriteOptions{OpID: "nope"}, p.ID)
			return err
		}},
		{"list limit", engine.CodeInvalidArgument, "limit", func() error { _, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS", Limit: 500}); return err }},
		{"bad cursor", engine.CodeInvalidArgument, "cursor", func() error {
			_, err := svc.ListPages(bg, lin(), kb.PageFilter{Space: "DOCS", Cursor: "!!"})
			return err
		}},
		{"empty query", engine.CodeInvalidArgument, "query", func() error { _, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "  "}); return err }},
		{"search limit", engine.CodeInvalidArgument, "limit", func() error {
			_, err := svc.SearchKnowledge(bg, lin(), kb.SearchQuery{Query: "x", Limit: 51})
			return err
		}},
		{"purge unknown", engine.CodeNotFound, "does not exist", func() error {
			_, err := svc.PurgePage(bg, w, "pg_00000000000000000000000000000002")
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := lastSeq(t, n)
			refusedWith(t, c.call(), c.code, c.mention)
			if after := lastSeq(t, n); after != before {
				t.Fatalf("the pages log moved from %d to %d", before, after)
			}
		})
	}
}
