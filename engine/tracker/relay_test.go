package tracker_test

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// TestOlderLayoutsAreRelaid: a file whose tables are in an older build's
// layout (tracker_history keyed by item, as the build before this one
// wrote it; and tracker_items a WITHOUT ROWID table too, as builds before
// that did) hashes as the same file in this build's layouts does, is
// rewritten into them by the next open (statelog_tables_relaid naming
// what it rewrote), with every row and hash as it was, every index and
// trigger a new file has, and each history row its item's doc; and it
// serves on: reads, the item's history, search, an update and a create.
// The open after that rewrites nothing.
func TestOlderLayoutsAreRelaid(t *testing.T) {
	for _, c := range []struct {
		name   string
		items  bool
		tables string
	}{
		{"history", false, "tracker_history"},
		{"items and history", true, "tracker_items,tracker_history"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			root, child, want, objects := fileItems(t, dir)
			putBackOlderLayout(t, dir, want, c.items)

			rec := enginetest.NewRecorder()
			n := enginetest.OpenNode(t, node.Config{Name: "n1", DataDir: dir, Logger: rec.Logger()})
			lines := rec.Lines(engine.EvTablesRelaid)
			if len(lines) != 1 || lines[0].Attrs["tables"] != c.tables || lines[0].Attrs[engine.LogDomain] != string(engine.DomainTracker) {
				t.Fatalf("the open said %+v, want one statelog_tables_relaid naming %s", lines, c.tables)
			}
			if ddl := tableDDL(t, n.DB().QueryRow, "tracker_items"); strings.Contains(ddl, "WITHOUT ROWID") || !strings.Contains(ddl, "doc            INTEGER PRIMARY KEY") {
				t.Fatalf("tracker_items after the open: %s", ddl)
			}
			if ddl := tableDDL(t, n.DB().QueryRow, "tracker_history"); strings.Contains(ddl, "WITHOUT ROWID") || !strings.Contains(ddl, "doc      INTEGER") {
				t.Fatalf("tracker_history after the open: %s", ddl)
			}
			got, err := snapshot.TableHashes(ctx, n.DB())
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("the relaid rows hash otherwise: %v", snapshot.Diff(want, got))
			}
			if after := schemaObjects(t, n.DB()); !maps.Equal(after, objects) {
				t.Fatalf("the relaid file's indexes and triggers %v, a new file's %v", after, objects)
			}
			historyDocs(t, n.DB(), 5)
			servesOn(t, n, root, child)
			n.Close()

			again := enginetest.NewRecorder()
			enginetest.OpenNode(t, node.Config{Name: "n1", DataDir: dir, Logger: again.Logger()})
			if l := again.Lines(engine.EvTablesRelaid); len(l) != 0 {
				t.Fatalf("the next open relaid again: %+v", l)
			}
		})
	}
}

// TestOlderBuildsHistoryRowGetsItsDoc: a history row written as a build
// before the appended layout writes it (no doc) into a file of this
// layout, which such a build may hold in a rolling upgrade (a donor's
// snapshot), gets its item's doc from the schema's trigger; one whose
// item was not there yet gets it at the next open.
func TestOlderBuildsHistoryRowGetsItsDoc(t *testing.T) {
	dir := t.TempDir()
	fileItems(t, dir)
	db, err := sqlite.Open(filepath.Join(dir, sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	older := `INSERT INTO tracker_history(item, seq, n, field, old, new, handoffs, at) SELECT id, 1000, 0, 'title', 'a', 'b', 0, 1 FROM tracker_items WHERE key = ?`
	if _, err := db.Exec(older, "ENG-1"); err != nil {
		t.Fatal(err)
	}
	historyDocs(t, db, 6)
	// A row the trigger did not see (its item's row written after it, as
	// no build does but a file may hold): the open gives it its doc.
	if _, err := db.Exec(`DROP TRIGGER tracker_history_older`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(strings.Replace(older, "1000", "1001", 1), "ENG-2"); err != nil {
		t.Fatal(err)
	}
	var nulls int
	if err := db.QueryRow(`SELECT count(*) FROM tracker_history WHERE doc IS NULL`).Scan(&nulls); err != nil || nulls != 1 {
		t.Fatalf("%d rows without a doc before the open (%v), want 1", nulls, err)
	}
	db.Close()
	n := enginetest.OpenNode(t, node.Config{Name: "n1", DataDir: dir})
	historyDocs(t, n.DB(), 7)
	if objects := schemaObjects(t, n.DB()); objects["tracker_history_older"] == "" {
		t.Fatalf("the open did not make the trigger again: %v", objects)
	}
}

// historyDocs: the file holds want history rows, each with its item's doc.
func historyDocs(t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var rows, wrong int
	if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE h.doc IS NOT (SELECT doc FROM tracker_items i WHERE i.id = h.item)) FROM tracker_history h`).Scan(&rows, &wrong); err != nil {
		t.Fatal(err)
	}
	if rows != want || wrong != 0 {
		t.Fatalf("%d history rows, %d without their item's doc; want %d, none", rows, wrong, want)
	}
}

// servesOn: the relaid file reads, searches and takes writes: the child
// item, the root's history and a search, then an update whose history
// change reads back and a create numbered after the file's items.
func servesOn(t *testing.T, n *node.Node, root, child string) {
	t.Helper()
	ctx := context.Background()
	svc := n.Tracker()
	lin := engine.ReadOptions{Level: engine.Linearizable}
	it, err := svc.GetWorkItem(ctx, lin, child)
	if err != nil || it.Item.Title != "draft the budget" {
		t.Fatalf("get %s after the relay: %+v %v", child, it, err)
	}
	h, err := svc.ItemHistory(ctx, lin, root)
	if err != nil || len(h.Changes) == 0 || h.Changes[len(h.Changes)-1].New != "quarterly roadmap, revised" {
		t.Fatalf("the history of %s after the relay: %+v %v", root, h.Changes, err)
	}
	found, err := svc.SearchWorkItems(ctx, lin, "roadmap", "ENG", 10)
	if err != nil || len(found.Hits) != 1 || found.Hits[0].Key != root {
		t.Fatalf("search after the relay: %+v %v", found.Hits, err)
	}
	status := tracker.StatusDone
	uw, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, child, 0, tracker.ItemPatch{Status: &status})
	enginetest.Landed(t, n, engine.DomainTracker, uw.WriteResult, err)
	page, err := svc.ListItemHistory(ctx, lin, child, "", 1)
	if err != nil || len(page.Changes) != 1 || page.Changes[0].Field != "status" || page.Changes[0].New != tracker.StatusDone {
		t.Fatalf("the newest change of %s after the update: %+v %v", child, page.Changes, err)
	}
	cw, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "after the relay"})
	enginetest.Landed(t, n, engine.DomainTracker, cw.WriteResult, err)
	if cw.Item == nil || cw.Item.Key != "ENG-4" {
		t.Fatalf("the create after the relay filed %+v", cw.Item)
	}
}

// schemaObjects are the file's indexes and triggers on the tracker's
// items and history, by name, with their text.
func schemaObjects(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT name, coalesce(sql, '') FROM sqlite_schema WHERE type IN ('index', 'trigger') AND tbl_name IN ('tracker_items', 'tracker_history')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			t.Fatal(err)
		}
		out[name] = q
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fileItems files a project of three items in dir, one a child and one
// updated, and answers two keys, the tables' hashes and the file's
// indexes and triggers on items and history.
func fileItems(t *testing.T, dir string) (root, child string, hashes, objects map[string]string) {
	ctx := context.Background()
	r := newRig(t, time.Now(), node.Config{DataDir: dir})
	r.project("ENG")
	root = r.item("ENG", "quarterly roadmap", "")
	child = r.item("ENG", "draft the budget", root)
	// Filed under an op id minted before the others', so its id sorts
	// first while its doc is the last: the two layouts' own orders differ.
	u, err := ledger.NewV7At(r.t0.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	early, err := r.svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: u.String()}, tracker.NewWorkItem{Project: "ENG", Title: "hire a designer"})
	enginetest.Landed(t, r.n, engine.DomainTracker, early.WriteResult, err)
	title := "quarterly roadmap, revised"
	w, err := r.svc.UpdateWorkItem(ctx, r.op("update_work_item", root), root, 0, tracker.ItemPatch{Title: &title})
	enginetest.Landed(t, r.n, engine.DomainTracker, w.WriteResult, err)
	if hashes, err = snapshot.TableHashes(ctx, r.n.DB()); err != nil {
		t.Fatal(err)
	}
	objects = schemaObjects(t, r.n.DB())
	r.n.Close()
	return root, child, hashes, objects
}

// putBackOlderLayout rewrites dir's tracker_history (with items,
// tracker_items too) into the older layout, and checks it hashes as want.
func putBackOlderLayout(t *testing.T, dir string, want map[string]string, items bool) {
	db, err := sqlite.Open(filepath.Join(dir, sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := enginetest.OlderHistoryLayout(context.Background(), db, items); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tableDDL(t, db.QueryRow, "tracker_history"), "WITHOUT ROWID") ||
		strings.Contains(tableDDL(t, db.QueryRow, "tracker_items"), "WITHOUT ROWID") != items {
		t.Fatal("the file was not put back in the older layout")
	}
	older, err := snapshot.TableHashes(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(older, want) {
		t.Fatalf("the older layout hashes otherwise: %v", snapshot.Diff(want, older))
	}
}

// tableDDL is the table's CREATE TABLE as the file holds it.
func tableDDL(t *testing.T, queryRow func(string, ...any) *sql.Row, table string) string {
	t.Helper()
	var ddl string
	if err := queryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	return ddl
}
