package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestWriterRejoinsTheLine: a writer that does not get the lock within
// store.busy_timeout_seconds (a transaction held past it) does not fail:
// it logs store_tx_retry naming the knob, rejoins the line and begins
// once the holder commits.
func TestWriterRejoinsTheLine(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec := enginetest.NewRecorder()
	sqlite.SetLogger(db, rec.Logger())
	ctx := context.Background()
	holder, err := sqlite.BeginWrite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// The holder commits only once the writer behind it has waited out a
	// whole busy timeout and said so.
	go func() {
		for len(rec.Lines(engine.EvStoreTxRetry)) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		holder.Commit()
	}()
	tx, err := sqlite.BeginWrite(ctx, db)
	if err != nil {
		t.Fatalf("a writer behind a long transaction failed instead of waiting its turn: %v", err)
	}
	if _, err := tx.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	l := rec.Lines(engine.EvStoreTxRetry)
	if len(l) == 0 || l[0].Attrs["knob"] != "store.busy_timeout_seconds" || l[0].Attrs[engine.LogComponent] != engine.ComponentStore {
		t.Fatalf("store_tx_retry lines: %+v", l)
	}
}
