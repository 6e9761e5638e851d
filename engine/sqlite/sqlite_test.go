package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestStatementsWithEveryConnectionHeld: as many transactions as the pool
// has connections each ask the cache for a query it does not hold yet.
// Preparing on the pool while holding a connection deadlocked here (found
// by the concurrency-64 benchmark as 10 s stalls of every write); each
// must get its statement and run it.
func TestStatementsWithEveryConnectionHeld(t *testing.T) {
	db := openWithTable(t)
	if _, err := db.Exec(`INSERT INTO t VALUES (1, 'one')`); err != nil {
		t.Fatal(err)
	}
	stmts := sqlite.NewStatements(db)
	const held = sqlite.PoolSize
	for round := 0; round < 3; round++ {
		query := fmt.Sprintf("SELECT v FROM t WHERE k = ? AND %d = %d", round, round)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var begun, wg sync.WaitGroup
		begun.Add(held)
		errs := make(chan error, held)
		for i := 0; i < held; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tx, err := sqlite.BeginRead(ctx, db)
				begun.Done()
				if err != nil {
					errs <- err
					return
				}
				defer tx.Rollback()
				begun.Wait() // every connection is held now
				st, err := stmts.In(ctx, tx, query)
				if err != nil {
					errs <- fmt.Errorf("prepare with every connection held: %w", err)
					return
				}
				var v string
				if err := st.QueryRowContext(ctx, 1).Scan(&v); err != nil || v != "one" {
					errs <- fmt.Errorf("query: %q %v", v, err)
				}
			}()
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	// The background fill lands: a later use runs the cached statement.
	deadline := time.Now().Add(5 * time.Second)
	for {
		tx, err := sqlite.BeginRead(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		st, err := stmts.In(context.Background(), tx, "SELECT v FROM t WHERE k = ? AND 0 = 0")
		var v string
		if err == nil {
			err = st.QueryRow(1).Scan(&v)
		}
		_ = tx.Rollback()
		if err != nil || v != "one" {
			t.Fatalf("cached statement: %q %v", v, err)
		}
		if stmts.Cached("SELECT v FROM t WHERE k = ? AND 0 = 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background prepare never filled the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openWithTable opens a fresh database, closed when the test ends, with
// an empty table t (k INTEGER PRIMARY KEY, v TEXT).
func openWithTable(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	return db
}
