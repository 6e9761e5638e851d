package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestBoundKeepsStatementsForItsTransaction: statements kept bound to one
// transaction run there record after record, and a Bound handed another
// transaction is not used for it (its statements closed with their own),
// so the second transaction's writes land and commit.
func TestBoundKeepsStatementsForItsTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)`); err != nil {
		t.Fatal(err)
	}
	s := sqlite.NewStatements(db)
	const ins = `INSERT INTO t(a, b) VALUES(?, ?)`
	var stale *sqlite.Bound
	for round := 0; round < 2; round++ {
		tx, err := sqlite.BeginWrite(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		b := sqlite.NewBound(tx)
		for i := 0; i < 50; i++ {
			if _, err := (sqlite.Cached{Tx: tx, S: s, B: b}).ExecContext(ctx, ins, round*100+i, "x"); err != nil {
				t.Fatal(err)
			}
			// The first round's Bound, whose statements closed with its
			// transaction, handed to this one.
			if stale != nil {
				if _, err := (sqlite.Cached{Tx: tx, S: s, B: stale}).ExecContext(ctx, ins, round*100+50+i, "y"); err != nil {
					t.Fatalf("a Bound of another transaction was used: %v", err)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		stale = b
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 150 {
		t.Fatalf("rows %d %v, want 150", n, err)
	}
}
