package sqlite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestPointStatementsAndWriteTransactions: a point statement (Cached's
// Exec and QueryRow) and a write transaction refuse a context that has
// already ended, writing nothing; once begun, a write transaction is its
// owner's to end: the end of the context it was begun with does not roll
// it back, so what the owner commits is committed.
func TestPointStatementsAndWriteTransactions(t *testing.T) {
	db := openWithTable(t)
	ended, end := context.WithCancel(context.Background())
	end()
	if tx, err := sqlite.BeginWrite(ended, db); !errors.Is(err, context.Canceled) || tx != nil {
		t.Fatalf("BeginWrite on an ended context: %v, %v", tx, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tx, err := sqlite.BeginWrite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	c := sqlite.Cached{Tx: tx, S: sqlite.NewStatements(db)}
	if _, err := c.ExecContext(ended, `INSERT INTO t VALUES (1, 'refused')`); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec on an ended context: %v", err)
	}
	var v string
	if err := c.QueryRowContext(ended, `SELECT v FROM t WHERE k = 2`).Scan(&v); !errors.Is(err, context.Canceled) {
		t.Fatalf("QueryRow on an ended context: %v", err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES (2, 'kept')`); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := c.ExecContext(context.Background(), `INSERT INTO t VALUES (3, 'after')`); err != nil {
		t.Fatalf("the transaction ended with its context: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after the context ended: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE k IN (2, 3)`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d of 2 rows committed (%v)", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE k = 1`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused insert landed (%d, %v)", n, err)
	}
}
