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
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/ledger"
)

// TestOlderItemsLayoutIsRelaid: a file whose tracker_items is the WITHOUT
// ROWID table of earlier builds hashes as the same file in the rowid
// layout does (the hash reads both in id order), is rewritten into the
// rowid layout by the next open (statelog_tables_relaid), with every row
// and hash as it was, and serves on: reads, search, an update and a
// create. The open after that rewrites nothing.
func TestOlderItemsLayoutIsRelaid(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	root, child, want := fileItems(t, dir)
	putBackOlderLayout(t, dir, want)

	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Name: "n1", DataDir: dir, Logger: rec.Logger()})
	lines := rec.Lines(engine.EvTablesRelaid)
	if len(lines) != 1 || lines[0].Attrs["tables"] != "tracker_items" || lines[0].Attrs[engine.LogDomain] != string(engine.DomainTracker) {
		t.Fatalf("the open said %+v, want one statelog_tables_relaid naming tracker_items", lines)
	}
	if ddl := itemsDDL(t, n.DB().QueryRow); strings.Contains(ddl, "WITHOUT ROWID") || !strings.Contains(ddl, "doc            INTEGER PRIMARY KEY") {
		t.Fatalf("tracker_items after the open: %s", ddl)
	}
	got, err := snapshot.TableHashes(ctx, n.DB())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the relaid rows hash otherwise: %v", snapshot.Diff(want, got))
	}
	var idx int
	if err := n.DB().QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'tracker_items' AND name LIKE 'tracker_items_%'`).Scan(&idx); err != nil || idx != 3 {
		t.Fatalf("tracker_items has %d of its 3 named indexes after the relay (%v)", idx, err)
	}

	svc := n.Tracker()
	lin := engine.ReadOptions{Level: engine.Linearizable}
	it, err := svc.GetWorkItem(ctx, lin, child)
	if err != nil || it.Item.Title != "draft the budget" {
		t.Fatalf("get %s after the relay: %+v %v", child, it, err)
	}
	found, err := svc.SearchWorkItems(ctx, lin, "roadmap", "ENG", 10)
	if err != nil || len(found.Hits) != 1 || found.Hits[0].Key != root {
		t.Fatalf("search after the relay: %+v %v", found.Hits, err)
	}
	status := tracker.StatusDone
	uw, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, child, 0, tracker.ItemPatch{Status: &status})
	enginetest.Landed(t, n, engine.DomainTracker, uw.WriteResult, err)
	cw, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "after the relay"})
	enginetest.Landed(t, n, engine.DomainTracker, cw.WriteResult, err)
	if cw.Item == nil || cw.Item.Key != "ENG-4" {
		t.Fatalf("the create after the relay filed %+v", cw.Item)
	}
	n.Close()

	again := enginetest.NewRecorder()
	enginetest.OpenNode(t, node.Config{Name: "n1", DataDir: dir, Logger: again.Logger()})
	if l := again.Lines(engine.EvTablesRelaid); len(l) != 0 {
		t.Fatalf("the next open relaid again: %+v", l)
	}
}

// fileItems files a project of three items in dir, one a child and one
// updated, and answers two keys and the tables' hashes.
func fileItems(t *testing.T, dir string) (root, child string, hashes map[string]string) {
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
	r.n.Close()
	return root, child, hashes
}

// putBackOlderLayout rewrites dir's tracker_items into the older layout,
// and checks it hashes as want.
func putBackOlderLayout(t *testing.T, dir string, want map[string]string) {
	db, err := sqlite.Open(filepath.Join(dir, sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := enginetest.OlderItemsLayout(context.Background(), db, trackapply.Domain{}.Schema()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(itemsDDL(t, db.QueryRow), "WITHOUT ROWID") {
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

// itemsDDL is tracker_items' CREATE TABLE as the file holds it.
func itemsDDL(t *testing.T, queryRow func(string, ...any) *sql.Row) string {
	t.Helper()
	var ddl string
	if err := queryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'tracker_items'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	return ddl
}
