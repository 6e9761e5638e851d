package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestBulkApplyWritesOnlyWhatIsNew: a bulk record writes a history row
// for each tag and watcher an item did not hold (a value given twice, an
// item named twice, count once), status and assignee before them, one
// hand-off each, the project's active count; the item rows it writes
// light carry the record's sequence; and a node rebuilt from the log
// reaches the very same rows.
func TestBulkApplyWritesOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRig(t, time.Now(), node.Config{DataDir: dir})
	r.project("ENG")
	var keys []string
	for i := 0; i < 6; i++ {
		keys = append(keys, r.item("ENG", fmt.Sprintf("item %d", i), ""))
	}
	if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", keys[1]), keys[1], 0, tracker.ItemPatch{AddTags: []string{"x"}, AddWatchers: []string{"w"}}); err != nil {
		t.Fatal(err)
	}
	st, bob := tracker.StatusInProgress, "bob"
	out, err := r.svc.BulkUpdate(ctx, r.op("bulk", "ENG"), "ENG", append(keys, keys[2]),
		tracker.BulkPatch{AddTags: []string{"x", "y", "x"}, AddWatchers: []string{"w"}, Status: &st, Assignee: &bob})
	if err != nil || out.Outcome != engine.Applied {
		t.Fatalf("bulk: %+v %v", out.WriteResult, err)
	}
	last := r.n.Replica(engine.DomainTracker).Applied()
	for i, k := range keys {
		want := "status open in_progress 0|assignee  bob 1|tag  x 1|tag  y 1|watcher  w 1"
		if i == 1 {
			want = "status open in_progress 0|assignee  bob 1|tag  y 1"
		}
		id := idOf(t, r, k)
		if got := bulkHistory(t, r, id); got != want {
			t.Errorf("%s's bulk history: %q, want %q", k, got, want)
		}
		if n := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE id = ? AND handoffs = 1 AND scoped_through = ? AND status = 'in_progress'`, id, last); n != 1 {
			t.Errorf("%s's row was not written at the bulk record's sequence %d", k, last)
		}
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_tags`); n != 12 {
		t.Errorf("%d tag rows, want 12", n)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_projects WHERE key = 'ENG' AND active = 6`); n != 1 {
		t.Error("the project's active count did not move to 6")
	}
	want := r.dump()
	r.n.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, sqlite.FileName+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	r2 := newRig(t, time.Now(), node.Config{DataDir: dir})
	if err := r2.svc.Replica().WaitApplied(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := r2.dump(); got != want {
		t.Fatalf("rebuilt rows differ:\n%s\nwant:\n%s", got, want)
	}
}

// bulkHistory is an item's history rows of its latest record.
func bulkHistory(t *testing.T, r *rig, id string) string {
	t.Helper()
	rows, err := r.n.DB().Query(`SELECT field, old, new, handoffs FROM tracker_history
		WHERE item = ? AND seq = (SELECT max(seq) FROM tracker_history WHERE item = ?) ORDER BY n`, id, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f, o, n string
		var h int
		if err := rows.Scan(&f, &o, &n, &h); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %d", f, o, n, h))
	}
	return strings.Join(out, "|")
}
