package kbapply_test

import (
	"fmt"
	"testing"

	"github.com/crewlet/crewlet/engine/kb/kbapply"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
)

// TestScripts runs the apply side's scripts (testdata/*.txt; the
// commands are applytest's, the record lines below): knowledge-base
// records appended to an in-memory log and applied on real SQLite files,
// the rows after every command held to the same records replayed from
// scratch. Rewrite the expected output with -rewrite.
func TestScripts(t *testing.T) {
	applytest.Run(t, "testdata", applytest.Domain{Domain: kbapply.Domain{}, Tables: tables, Record: pagesRecord,
		Checks: []string{
			`INSERT INTO kb_pages_fts(kb_pages_fts) VALUES('integrity-check')`,
			`INSERT INTO kb_titles_fts(kb_titles_fts) VALUES('integrity-check')`,
		}})
}

// tables are the knowledge base's tables as the scripts print them (the
// search indexes are held to their content by the checks above).
var tables = []applytest.Table{
	{Name: "kb_spaces", Order: "key", Print: "key, name, page_template, editing, version, settings_through, (updated_at - $T0) / 1000000000 AS updated"},
	{Name: "kb_archived", Order: "key"},
	{Name: "kb_pages", Order: "n", Print: "n, id, space, parent, title, body, version, scoped_through, (updated_at - $T0) / 1000000000 AS updated"},
	{Name: "kb_trash", Order: "id"},
	{Name: "kb_purged", Order: "id", Print: "id, space, parent, seq"},
	{Name: "kb_versions", Order: "id, seq", Print: "id, seq, kind, actor, space, parent, title, body, trashed"},
	{Name: "kb_comments", Order: "id", Print: "id, page, author, body, seq, version"},
}

// pagesRecord is the record a script line names, declaring the scope the
// service declares for it (space= names the page's space where the
// payload does not carry it).
func pagesRecord(verb string, a applytest.Args) (*record.Record, error) {
	id, space := a.Str("id"), a.Str("space")
	page := func(kind string, payload any, scope ...string) (*record.Record, error) {
		return applytest.Make(kind, kbrec.PageSubject(id), append(scope, kbrec.PageScope(id)), payload)
	}
	switch verb {
	case "space":
		key := a.Str("key")
		return applytest.Make(kbrec.KindCreateSpace, kbrec.SpaceSubject(key), []string{kbrec.SpaceScope(key)}, kbrec.CreateSpace{Key: key, Name: a.Str("name")})
	case "space-update":
		key := a.Str("key")
		u := kbrec.UpdateSpace{Key: key, Name: a.Ptr("name"), PageTemplate: a.Ptr("template"), Editing: a.Ptr("editing")}
		if a.Has("archived") {
			return applytest.Make(kbrec.KindArchiveSpace, kbrec.SpaceSubject(key), []string{kbrec.SpaceScope(key)},
				kbrec.ArchiveSpace{UpdateSpace: u, Archived: a.Str("archived") == "true"})
		}
		return applytest.Make(kbrec.KindUpdateSpace, kbrec.SpaceSubject(key), []string{kbrec.SpaceScope(key)}, u)
	case "page":
		return page(kbrec.KindCreatePage, kbrec.CreatePage{ID: id, Space: space, Parent: a.Str("parent"), Title: a.Str("title"), Body: a.Str("body")},
			kbrec.SpaceScope(space))
	case "page-update":
		return page(kbrec.KindUpdatePage, updatePage(a), kbrec.SpaceScope(space))
	case "move-page":
		to := a.Str("to")
		return page(kbrec.KindMovePage, kbrec.MovePage{UpdatePage: updatePage(a), Space: to}, kbrec.SpaceScope(space), kbrec.SpaceScope(to))
	case "trash-page":
		return page(kbrec.KindTrashPage, kbrec.TrashPage{ID: id, Trashed: !a.Has("restore")}, kbrec.SpaceScope(space))
	case "purge-page":
		return page(kbrec.KindPurgePage, kbrec.PurgePage{ID: id}, kbrec.SpaceScope(space))
	case "comment":
		c := kbrec.Comment{ID: id, Page: a.Str("page"), Author: a.Str("author"), Body: a.Str("body"), Delete: a.Has("delete")}
		return applytest.Make(kbrec.KindComment, kbrec.CommentSubject(id), []string{kbrec.SpaceScope(space), kbrec.PageScope(c.Page)}, c)
	}
	return nil, fmt.Errorf("no record %q", verb)
}

func updatePage(a applytest.Args) kbrec.UpdatePage {
	return kbrec.UpdatePage{ID: a.Str("id"), Title: a.Ptr("title"), Body: a.Ptr("body"), Parent: a.Ptr("parent")}
}
