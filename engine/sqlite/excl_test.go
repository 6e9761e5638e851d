package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// probeEnv names the database a child copy of this test binary reads.
const probeEnv = "CREWLET_SQLITE_PROBE"

// TestMain lets the test binary run as that child: it opens the database
// as any other SQLite client would (the default VFS, no wait on a lock),
// reads it, prints what happened and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv(probeEnv); path != "" {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		var n int
		if err == nil {
			err = db.QueryRow(`SELECT count(*) FROM t`).Scan(&n)
		}
		if err != nil {
			fmt.Println("refused:", err)
		} else {
			fmt.Println("read", n)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probe runs the child on path and returns what it printed.
func probe(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the probe process: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAnotherProcessIsKeptOut: while a database is open here, another
// process cannot read it (the unix-excl VFS holds the file for this
// process, which keeps the WAL index in its own memory where no other
// process could see it); once it is closed, the other process reads what
// was written, WAL and all.
func TestAnotherProcessIsKeptOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db, err := sqlite.Open(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, path); !strings.HasPrefix(got, "refused:") || !strings.Contains(got, "locked") {
		t.Errorf("another process read the open database: %q, want it refused as locked", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, path); got != "read 2" {
		t.Errorf("another process after the close: %q, want \"read 2\"", got)
	}
}
