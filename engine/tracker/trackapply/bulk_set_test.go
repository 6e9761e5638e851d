package trackapply_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestBulkBySetWritesTheRowApplysRows: a bulk record (status, assignee,
// tags, watchers, any of them or none) is applied by statements over its
// ids (bulkBySet); on any state of its items (open, closed, in progress,
// assigned or not, holding some of the tags and watchers or none, in
// another project, trashed, missing, given twice, in one statement or
// across several: the test cuts the ids three to a statement), it leaves
// every table of the database as the row-by-row apply leaves it, history
// rows, computed columns and the project's active count included. Two databases take the same records, one of them with
// the row apply forced (trackapply.RowBulk), and are compared row by row.
func TestBulkBySetWritesTheRowApplysRows(t *testing.T) {
	defer trackapply.SetChunk(3)()
	sameRowsBothWays(t, drawBulkScript, trackapply.RowBulk, nil)
}

// sameRowsBothWays applies each script draw draws to two databases, the
// second with an older build's apply forced (force, undone after), and
// fails where their rows differ: every ordinary table (dumpTables), and
// what extra renders where it is given.
func sameRowsBothWays(t *testing.T, draw func(*rapid.T) *bulkScript, force func() (undo func()), extra func(context.Context, *rapid.T, *sql.DB) string) {
	ctx := context.Background()
	dir := t.TempDir()
	// Each case's two databases are copies of one file that holds the
	// schema: making a database's schema costs more than a case.
	template := filepath.Join(dir, "schema.db")
	openApplyDB(t, template).Close()
	schema, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		script := draw(rt)
		var dumps [2]string
		for i, side := range []string{"new", "old"} {
			path := filepath.Join(dir, fmt.Sprintf("%s-%d.db", side, round))
			if err := os.WriteFile(path, schema, 0o600); err != nil {
				rt.Fatal(err)
			}
			db := openApplyDB(rt, path)
			if side == "old" {
				undo := force()
				script.play(ctx, rt, db)
				undo()
			} else {
				script.play(ctx, rt, db)
			}
			dumps[i] = dumpTables(ctx, rt, db)
			if extra != nil {
				dumps[i] += extra(ctx, rt, db)
			}
			db.Close()
		}
		if dumps[0] != dumps[1] {
			rt.Fatalf("the applies differ:\nthis build's:\n%s\nthe older build's:\n%s", dumps[0], dumps[1])
		}
	})
}

// bulkScript is a sequence of records: the set-up that puts the items in
// their states, then the bulk records under test.
type bulkScript struct {
	recs []scriptRec
}

type scriptRec struct {
	kind, subject string
	payload       any
}

func (s *bulkScript) add(kind, subject string, payload any) {
	s.recs = append(s.recs, scriptRec{kind, subject, payload})
}

// play applies the script's records, in one transaction (each applied
// by hand, as a domain without an applier).
func (s *bulkScript) play(ctx context.Context, rt *rapid.T, db *sql.DB) {
	tx, err := sqlite.BeginWrite(ctx, db)
	if err != nil {
		rt.Fatal(err)
	}
	defer tx.Rollback()
	for i, r := range s.recs {
		if err := applyByHand(ctx, tx, uint64(i)+1, r.kind, r.subject, r.payload); err != nil {
			rt.Fatalf("apply %d %s: %v", i+1, r.kind, err)
		}
	}
	if err := tx.Commit(); err != nil {
		rt.Fatal(err)
	}
}

// drawBulkScript files items into two projects, moves them into drawn
// states, then draws bulk records over drawn ids (some missing, some of
// the other project, some twice).
func drawBulkScript(rt *rapid.T) *bulkScript {
	s := &bulkScript{}
	p, q := "P", "Q"
	for _, p := range []string{p, q} {
		s.add(trackrec.KindCreateProject, trackrec.ProjectSubject(p), trackrec.CreateProject{Key: p, Name: p})
	}
	people := []string{"", "ana", "bo"}
	tags, watchers := []string{"x", "y", "z"}, []string{"ana", "bo"}
	n := rapid.IntRange(1, 12).Draw(rt, "items")
	var ids []string
	for i := range n {
		id, p := fmt.Sprintf("i%d", i), p
		if i%5 == 4 {
			p = q
		}
		ids = append(ids, id)
		s.add(trackrec.KindCreateWorkItem, trackrec.ItemSubject(id), trackrec.CreateWorkItem{ID: id, Project: p, Number: int64(i + 1), Title: "item", Status: trackrec.StatusOpen})
		st := rapid.SampledFrom(trackrec.Statuses).Draw(rt, "status")
		who := rapid.SampledFrom(people).Draw(rt, "assignee")
		s.add(trackrec.KindUpdateWorkItem, trackrec.ItemSubject(id), trackrec.UpdateWorkItem{ID: id, Status: &st, Assignee: &who,
			AddTags: drawValues(rt, "held tags", tags), AddWatchers: drawValues(rt, "held watchers", watchers)})
		if rapid.IntRange(0, 5).Draw(rt, "trash") == 0 {
			s.add(trackrec.KindTrash, trackrec.ItemSubject(id), trackrec.Trash{ID: id, Root: id})
		}
	}
	for range rapid.IntRange(1, 4).Draw(rt, "bulks") {
		b := trackrec.BulkUpdate{Project: rapid.SampledFrom([]string{p, p, q}).Draw(rt, "project"),
			AddTags: drawValues(rt, "add tags", tags), AddWatchers: drawValues(rt, "add watchers", watchers)}
		if rapid.Bool().Draw(rt, "move status") {
			st := rapid.SampledFrom(trackrec.Statuses).Draw(rt, "to status")
			b.Status = &st
		}
		kind := trackrec.KindBulkUpdate
		if rapid.Bool().Draw(rt, "assign") {
			who := rapid.SampledFrom(people).Draw(rt, "to assignee")
			b.Assignee, kind = &who, trackrec.KindBulkSet
		}
		for range rapid.IntRange(0, 2*len(ids)).Draw(rt, "picks") {
			b.Items = append(b.Items, rapid.SampledFrom(append(ids, "missing")).Draw(rt, "id"))
		}
		s.add(kind, trackrec.ProjectSubject(b.Project), b)
	}
	return s
}

// drawValues is up to four of vals, a value at times given twice.
func drawValues(rt *rapid.T, label string, vals []string) []string {
	return rapid.SliceOfN(rapid.SampledFrom(vals), 0, 4).Draw(rt, label)
}

func openApplyDB(rt interface{ Fatal(...any) }, path string) *sql.DB {
	db, err := sqlite.Open(path, 5)
	if err != nil {
		rt.Fatal(err)
	}
	if _, err := db.Exec(trackapply.Domain{}.Schema()); err != nil {
		rt.Fatal(err)
	}
	return db
}

// dumpTables is every row of every ordinary table of db, tables by name
// and rows sorted, one line a row.
func dumpTables(ctx context.Context, rt *rapid.T, db *sql.DB) string {
	names, err := sqlite.Strings(ctx, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name`)
	if err != nil {
		rt.Fatal(err)
	}
	var out strings.Builder
	for _, name := range names {
		_, lines, err := applytest.RenderRows(ctx, db, `SELECT * FROM "`+name+`"`)
		if err != nil {
			rt.Fatal(err)
		}
		slices.Sort(lines)
		fmt.Fprintf(&out, "%s (%d rows)\n  %s\n", name, len(lines), strings.Join(lines, "\n  "))
	}
	return out.String()
}
