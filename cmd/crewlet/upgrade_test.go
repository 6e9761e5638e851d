//go:build integration

package main

import (
	"context"
	"database/sql"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/sqlite"
)

var (
	nextOnce sync.Once
	nextPath string
	nextErr  error
)

// buildNextBinary builds the next release as the rolling-upgrade test
// plays it: this tree with -tags crewlet_nextformat, which reads and
// writes record format 4 and stamps every work-item update with it.
func buildNextBinary(t *testing.T) string {
	t.Helper()
	BuildBinary(t) // the same temporary directory, removed by TestMain
	nextOnce.Do(func() {
		nextPath = filepath.Join(binDir, "crewlet-next")
		args := []string{"build", "-tags", "crewlet_nextformat", "-o", nextPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
			nextErr = err
			t.Logf("go build -tags crewlet_nextformat: %s", out)
		}
	})
	if nextErr != nil {
		t.Fatal(nextErr)
	}
	return nextPath
}

// TestRollingUpgradeTwoBuilds: a fleet of three `crewlet serve` children
// on this build is upgraded one node at a time to the next build, which
// writes work-item updates at a record format this build cannot read.
// Mid-upgrade, the node still on this build retains the update it cannot
// decode (and everything its scope meets): its reads and writes about
// that item refuse deferred, while every other item reads and writes as
// before. Upgraded last, it applies what it retained at boot, and the
// three copies are identical, table by table; nothing acknowledged is
// lost.
func TestRollingUpgradeTwoBuilds(t *testing.T) {
	next := buildNextBinary(t)
	f := startChildFleet(t)
	defer func() {
		for _, s := range f.serves {
			s.Stop(t)
		}
	}()
	old := f.serves[2].HTTPClient(t)
	callRetry(t, old, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	a := callRetry(t, old, "create_work_item", map[string]any{"project": "ENG", "title": "a"})["item"].(map[string]any)["key"].(string)
	b := callRetry(t, old, "create_work_item", map[string]any{"project": "ENG", "title": "b"})["item"].(map[string]any)["key"].(string)

	// The upgrade, one node at a time: n1, then n2.
	for i := 0; i < 2; i++ {
		f.serves[i].Stop(t)
		s, err := spawnServe(t, next, f.dirs[i], "--config", f.configs[i])
		if err != nil {
			t.Fatalf("n%d on the next build: %v", i+1, err)
		}
		f.serves[i] = s
	}
	upgraded := f.serves[0].HTTPClient(t)
	w := callRetry(t, upgraded, "update_work_item", map[string]any{"key": a, "title": "renamed by the next build"})
	if w["outcome"] != "applied" {
		t.Fatalf("the next build's update: %v", w)
	}

	// n3, still on this build, retains it: reads and writes about a
	// refuse deferred naming what to do; b is untouched.
	refusedWith(t, old, "get_work_item", map[string]any{"key": a}, "deferred")
	refusedWith(t, old, "update_work_item", map[string]any{"key": a, "title": "decided against old rows"}, "deferred")
	if w := callRetry(t, old, "update_work_item", map[string]any{"key": b, "title": "b, on this build"}); w["outcome"] != "applied" {
		t.Fatalf("a write about another item mid-upgrade: %v", w)
	}
	if got := callRetry(t, upgraded, "get_work_item", map[string]any{"key": b})["item"].(map[string]any)["title"]; got != "b, on this build" {
		t.Fatalf("the next build reads b as %q", got)
	}

	// n3 upgraded last: it applies what it retained before anything new.
	f.serves[2].Stop(t)
	s, err := spawnServe(t, next, f.dirs[2], "--config", f.configs[2])
	if err != nil {
		t.Fatalf("n3 on the next build: %v", err)
	}
	f.serves[2] = s
	if !strings.Contains(s.Stderr.String(), "statelog_retained_released") {
		t.Errorf("n3's boot wrote no statelog_retained_released line")
	}
	got := callRetry(t, s.HTTPClient(t), "get_work_item", map[string]any{"key": a})["item"].(map[string]any)
	if got["title"] != "renamed by the next build" {
		t.Fatalf("n3 after its upgrade reads %s as %v", a, got)
	}
	for i := range f.serves {
		// A linearizable read on each: every node has consumed the log
		// at least through every write above.
		callRetry(t, f.serves[i].HTTPClient(t), "get_work_item", map[string]any{"key": b})
	}
	for _, s := range f.serves {
		s.Stop(t)
	}
	sameCopies(t, f.dirs)
}

// refusedWith calls a tool until it answers the refusal code want (a node
// may answer behind first, while it catches up).
func refusedWith(t *testing.T, c *client.Client, name string, args map[string]any, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s(%v): %v", name, args, err)
		}
		code := resultObject(res)["refused"]
		if code == want {
			return
		}
		if !res.IsError || time.Now().After(deadline) || (code != "behind" && code != "broker_unreachable" && code != "no_quorum") {
			t.Fatalf("%s(%v) answered %s, want refused %s", name, args, resultText(res), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sameCopies holds the stopped nodes' databases to one another, table by
// table, in the domains that claim identical rows (replicatedHashes; the
// checkpoints aside: each node stopped at its own place among
// the barriers the others appended), and finds nothing still retained.
func sameCopies(t *testing.T, dirs []string) {
	t.Helper()
	ctx := context.Background()
	var first map[string]string
	for i, dir := range dirs {
		db, err := sqlite.Open(filepath.Join(dir, "crewlet-replicated.db"), 1)
		if err != nil {
			t.Fatal(err)
		}
		hashes, err := replicatedHashes(ctx, db)
		var retained int
		if err == nil {
			err = db.QueryRowContext(ctx, `SELECT count(*) FROM statelog_retained`).Scan(&retained)
		}
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if retained != 0 {
			t.Errorf("n%d still retains %d record(s) on the next build", i+1, retained)
		}
		delete(hashes, "statelog_checkpoint")
		if first == nil {
			first = hashes
			continue
		}
		for table, h := range first {
			if hashes[table] != h {
				t.Errorf("n%d's %s differs from n1's", i+1, table)
			}
		}
	}
}

// replicatedHashes are the table hashes of the domains that claim two
// nodes hold identical rows: a compacted domain's (the vectors, the days
// of usage) do not, since each node applies their current values when it
// gets to them, so their tables and their rows in the framework's shared
// tables are left out, read in a transaction that is rolled back.
func replicatedHashes(ctx context.Context, db *sql.DB) (map[string]string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var compacted []string
	for _, sp := range domains.Builtin().Specs() {
		if !sp.Compacted {
			continue
		}
		name := string(sp.Name())
		compacted = append(compacted, name)
		for _, table := range []string{"statelog_anchor", "statelog_ledger", "statelog_gated", "statelog_retained"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE domain = ?`, name); err != nil {
				return nil, err
			}
		}
	}
	hashes, err := snapshot.TableHashes(ctx, tx)
	if err != nil {
		return nil, err
	}
	for table := range hashes {
		for _, name := range compacted {
			if table == name || strings.HasPrefix(table, name+"_") {
				delete(hashes, table)
			}
		}
	}
	return hashes, nil
}
