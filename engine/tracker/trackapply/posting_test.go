package trackapply_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestPostingInPlaceWritesTheSameRows: a title or description edit
// rewrites the item's search posting in place (an UPDATE of the FTS5
// row, its comments kept) where an older build deletes the posting and
// inserts it again with its comments read from tracker_comments. A fleet
// holding both builds must hold the same rows, so two databases take the
// same drawn records, one with the older way forced
// (trackapply.PostingByDeleteInsert), and every table is compared: the
// ordinary tables and FTS5's shadow tables row by row, the postings
// themselves, a ranked search over every word the script wrote, and
// FTS5's integrity check on each. The records interleave edits with
// comments added, edited and deleted (by their author or not), trash,
// restore, moves, merges and purges, over a few items, so an edit meets
// a posting every other change has moved.
func TestPostingInPlaceWritesTheSameRows(t *testing.T) {
	sameRowsBothWays(t, drawPostingScript, trackapply.PostingByDeleteInsert, dumpSearch)
}

// postingWords are the words a drawn script writes: a few, so searches
// and postings share them.
var postingWords = []string{"alpha", "beta", "gamma", "delta", "alpha beta", "gamma gamma delta", ""}

// drawPostingScript files up to five items in two projects, then draws
// records that move their postings.
func drawPostingScript(rt *rapid.T) *bulkScript {
	s := &bulkScript{}
	for _, p := range []string{"P", "Q"} {
		s.add(trackrec.KindCreateProject, trackrec.ProjectSubject(p), trackrec.CreateProject{Key: p, Name: p})
	}
	n := rapid.IntRange(1, 5).Draw(rt, "items")
	ids := []string{"missing"}
	for i := range n {
		id := fmt.Sprintf("i%d", i)
		ids = append(ids, id)
		s.add(trackrec.KindCreateWorkItem, trackrec.ItemSubject(id), trackrec.CreateWorkItem{ID: id, Project: "P", Number: int64(i + 1),
			Title: rapid.SampledFrom(postingWords).Draw(rt, "title"), Description: rapid.SampledFrom(postingWords).Draw(rt, "description"), Status: trackrec.StatusOpen})
	}
	var comments []uint64 // the seqs of the comment records, a comment's id
	authors := []string{"ana", "bo"}
	for range rapid.IntRange(1, 30).Draw(rt, "records") {
		id := rapid.SampledFrom(ids).Draw(rt, "id")
		subject := trackrec.ItemSubject(id)
		word := func(label string) *string {
			w := rapid.SampledFrom(postingWords).Draw(rt, label)
			return &w
		}
		switch rapid.IntRange(0, 9).Draw(rt, "kind") {
		case 0, 1, 2:
			u := trackrec.UpdateWorkItem{ID: id}
			if rapid.Bool().Draw(rt, "edit title") {
				u.Title = word("new title")
			}
			if rapid.Bool().Draw(rt, "edit description") {
				u.Description = word("new description")
			}
			s.add(trackrec.KindUpdateWorkItem, subject, u)
		case 3, 4:
			comments = append(comments, uint64(len(s.recs)+1))
			s.add(trackrec.KindComment, subject, trackrec.Comment{ID: id, Author: rapid.SampledFrom(authors).Draw(rt, "author"), Body: *word("body")})
		case 5:
			e := trackrec.EditComment{ID: id, Comment: 1, Author: rapid.SampledFrom(authors).Draw(rt, "editor"), Delete: rapid.Bool().Draw(rt, "delete")}
			if len(comments) > 0 {
				e.Comment = rapid.SampledFrom(comments).Draw(rt, "comment")
			}
			if !e.Delete {
				e.Body = *word("edited body")
			}
			s.add(trackrec.KindEditComment, subject, e)
		case 6:
			if rapid.Bool().Draw(rt, "restore") {
				s.add(trackrec.KindRestore, subject, trackrec.Restore{ID: id})
			} else {
				s.add(trackrec.KindTrash, subject, trackrec.Trash{ID: id, Root: id})
			}
		case 7:
			s.add(trackrec.KindMove, subject, trackrec.Move{ID: id, To: rapid.SampledFrom([]string{"P", "Q"}).Draw(rt, "to")})
		case 8:
			s.add(trackrec.KindMergeDuplicate, subject, trackrec.MergeDuplicate{ID: id, Into: rapid.SampledFrom(ids).Draw(rt, "into")})
		case 9:
			s.add(trackrec.KindPurge, subject, trackrec.Purge{ID: id})
		}
	}
	return s
}

// dumpSearch checks db's postings with FTS5's integrity check, then
// renders every posting and, for each word a script writes, the postings
// it finds ranked as search ranks them.
func dumpSearch(ctx context.Context, rt *rapid.T, db *sql.DB) string {
	if _, err := db.ExecContext(ctx, `INSERT INTO tracker_search(tracker_search) VALUES('integrity-check')`); err != nil {
		rt.Fatal(err)
	}
	lines, err := sqlite.Strings(ctx, db, `SELECT rowid || ' ' || quote(title) || ' ' || quote(description) || ' ' || quote(comments) FROM tracker_search ORDER BY rowid`)
	if err != nil {
		rt.Fatal(err)
	}
	out := fmt.Sprintf("tracker_search (%d postings)\n  %v\n", len(lines), lines)
	for _, w := range []string{"alpha", "beta", "gamma", "delta"} {
		ranked, err := sqlite.Strings(ctx, db, `SELECT rowid || ' ' || printf('%.9f', bm25(tracker_search, 10.0, 3.0, 0.2)) FROM tracker_search WHERE tracker_search MATCH ? ORDER BY rank, rowid`, w)
		if err != nil {
			rt.Fatal(err)
		}
		out += fmt.Sprintf("%s: %v\n", w, ranked)
	}
	return out
}
