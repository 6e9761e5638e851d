package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestCheckpointerCopiesTheWALBack: pages a commit leaves in the WAL, far
// below the inline checkpoint's threshold, stay out of the database file
// until a Checkpointer runs, and are in it once one has.
func TestCheckpointerCopiesTheWALBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.db")
	db, err := sqlite.Open(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var backstop int
	if err := db.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&backstop); err != nil {
		t.Fatal(err)
	}
	if backstop != 16000 {
		t.Fatalf("wal_autocheckpoint = %d, want the 16000-page backstop", backstop)
	}
	if _, err := db.Exec(`CREATE TABLE big(id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	const rows = 200 // a 4 KB value each: a page apiece, and more
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		if _, err := tx.Exec(`INSERT INTO big(v) VALUES (?)`, strings.Repeat("x", 4000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if s := size(); s >= rows*4096 {
		t.Fatalf("the database file holds %d bytes before any checkpoint: the commit checkpointed inline", s)
	}
	ck := sqlite.StartCheckpointer(db, time.Millisecond)
	// The second checkpoint to complete began after the commit above.
	for ck.Runs() < 2 {
		time.Sleep(time.Millisecond)
	}
	ck.Stop()
	ck.Stop() // a second Stop is a no-op
	if s := size(); s < rows*4096 {
		t.Fatalf("the database file holds %d bytes after the checkpointer ran, want the %d rows' pages (≥ %d)", s, rows, rows*4096)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM big`).Scan(&n); err != nil || n != rows {
		t.Fatalf("rows after the checkpoints = %d, %v; want %d", n, err, rows)
	}
}
