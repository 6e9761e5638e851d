package enginetest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestWALPagesCountsACommitByTree: after a TRUNCATE checkpoint, one row
// into a table with one index writes one page of each, and the count
// says so by name; an empty WAL counts nothing.
func TestWALPagesCountsACommitByTree(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "w.db"), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL); CREATE INDEX t_v ON t(v)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if byTree, total, err := enginetest.WALPages(ctx, db); err != nil || total != 0 || len(byTree) != 0 {
		t.Fatalf("an empty WAL: %v %d %v", byTree, total, err)
	}
	if _, err := db.Exec(`INSERT INTO t (v) VALUES ('one')`); err != nil {
		t.Fatal(err)
	}
	byTree, total, err := enginetest.WALPages(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if byTree["t"] != 1 || byTree["t_v"] != 1 || total != 2 {
		t.Fatalf("one row: %v, %d pages in all; want t and t_v one page each", byTree, total)
	}
}
