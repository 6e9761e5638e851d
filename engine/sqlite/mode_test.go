package sqlite_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestFilesOwnerOnly: the database and its -wal are 0600 whatever the
// process's umask (the test process runs with its inherited one, usually
// 022, under which SQLite alone creates them 0644), and there is no -shm:
// the WAL index is in the process's memory (the unix-excl VFS).
func TestFilesOwnerOnly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db, err := sqlite.Open(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A write makes the -wal exist while the database is open.
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-shm"); !os.IsNotExist(err) {
		t.Errorf("%s-shm: %v, want none (the WAL index belongs in the process's memory)", filepath.Base(path), err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}
