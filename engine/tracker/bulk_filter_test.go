//go:build integration

package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestBulkUpdateByFilterOnce: a bulk update of the items a filter picks,
// in chunks, sets the assignee and a tag on exactly those; retried under
// the same op id it appends nothing and writes no history twice; progress
// is told after each chunk.
func TestBulkUpdateByFilterOnce(t *testing.T) {
	r := newRig(t, time.Now())
	r.project("ENG")
	const n = 2500
	keys := publishCreates(t, r, "ENG", n)
	ctx := context.Background()
	done := tracker.StatusDone
	if _, err := r.svc.BulkUpdate(ctx, r.op("bulk", "ENG"), "ENG", keys[:100], tracker.BulkPatch{Status: &done}); err != nil {
		t.Fatal(err)
	}
	bob := "bob"
	patch := tracker.BulkPatch{Assignee: &bob, AddTags: []string{"triaged"}}
	var prog progressLog
	w := r.op("bulk", "ENG")
	out, err := r.svc.BulkUpdateWhere(prog.ctx(), w, "ENG", nil, tracker.BulkFilter{Status: "open, in_progress"}, patch)
	if err != nil || out.Outcome != engine.Applied || len(out.Steps) != 3 {
		t.Fatalf("bulk by filter: %d steps %+v %v", len(out.Steps), out.WriteResult, err)
	}
	if got := prog.last(); got != [2]int{n - 100, n - 100} || len(prog.seen) != 4 || prog.seen[0] != [2]int{0, n - 100} {
		t.Errorf("progress told %v, want 0 first, then a report per chunk ending at %d", prog.seen, n-100)
	}
	hist := rowCount(t, r, `SELECT count(*) FROM tracker_history`)
	if got := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE assignee = 'bob'`); got != n-100 {
		t.Fatalf("%d items assigned, want %d", got, n-100)
	}
	if got := rowCount(t, r, `SELECT count(*) FROM tracker_items i JOIN tracker_tags g ON g.item = i.id WHERE g.tag = 'triaged' AND i.status = 'done'`); got != 0 {
		t.Fatalf("%d items outside the filter were tagged", got)
	}
	before := r.log.appends.Load()
	again, err := r.svc.BulkUpdateWhere(ctx, w, "ENG", nil, tracker.BulkFilter{Status: "open, in_progress"}, patch)
	if err != nil || again.Outcome != engine.Applied {
		t.Fatalf("again: %+v %v", again.WriteResult, err)
	}
	if got := r.log.appends.Load(); got != before {
		t.Fatalf("the same op id appended %d records again", got-before)
	}
	if got := rowCount(t, r, `SELECT count(*) FROM tracker_history`); got != hist {
		t.Fatalf("history rows %d after the retry, %d before", got, hist)
	}
	if got := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE handoffs != 1 AND assignee = 'bob'`); got != 0 {
		t.Fatalf("%d items handed off more than once", got)
	}
}
