package tracker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// progressLog collects what a call's engine.Progress is told.
type progressLog struct {
	mu   sync.Mutex
	seen [][2]int
}

func (p *progressLog) ctx() context.Context {
	return engine.WithProgress(context.Background(), func(done, total int) {
		p.mu.Lock()
		p.seen = append(p.seen, [2]int{done, total})
		p.mu.Unlock()
	})
}

func (p *progressLog) last() [2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return [2]int{}
	}
	return p.seen[len(p.seen)-1]
}

// TestEmptyTrashPurgesTheTrashOnce: empty_trash purges exactly the items
// in the trash; brought back under the same op id after another item was
// trashed, it answers the same purges and writes nothing (the cut-off is
// its first step's sequence).
func TestEmptyTrashPurgesTheTrashOnce(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	a, b, c, d := r.item("ENG", "A", ""), r.item("ENG", "B", ""), r.item("ENG", "C", ""), r.item("ENG", "D", "")
	for _, k := range []string{a, b} {
		if out, err := r.svc.TrashWorkItem(ctx, r.op("trash", k), k); err != nil || out.Outcome != engine.Applied {
			t.Fatalf("trash %s: %+v %v", k, out, err)
		}
	}
	ids := map[string]string{a: idOf(t, r, a), b: idOf(t, r, b), c: idOf(t, r, c), d: idOf(t, r, d)}
	var prog progressLog
	w := r.op("empty_trash", "ENG")
	out, err := r.svc.EmptyTrash(prog.ctx(), w, "ENG")
	if err != nil || out.Outcome != engine.Applied || len(out.Steps) != 3 {
		t.Fatalf("empty_trash: %+v %v", out, err)
	}
	if prog.last() != [2]int{2, 2} {
		t.Errorf("progress told %v, want 2 of 2 last", prog.seen)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_purged`); n != 2 {
		t.Fatalf("%d items purged, want 2", n)
	}
	for _, k := range []string{a, b} {
		if n := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE id = ?`, ids[k]); n != 0 {
			t.Errorf("%s survived", k)
		}
	}
	if o, err := r.svc.TrashWorkItem(ctx, r.op("trash", c), c); err != nil || o.Outcome != engine.Applied {
		t.Fatalf("trash %s: %+v %v", c, o, err)
	}
	before := r.log.appends.Load()
	again, err := r.svc.EmptyTrash(ctx, w, "ENG")
	if err != nil || again.Outcome != engine.Applied {
		t.Fatalf("empty_trash again: %+v %v", again, err)
	}
	if got := r.log.appends.Load(); got != before {
		t.Fatalf("the same op id appended %d records again", got-before)
	}
	if again.Steps[0].Position != out.Steps[0].Position {
		t.Errorf("the cut-off moved: %s, first %s", again.Steps[0].Position, out.Steps[0].Position)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE id IN (?, ?) AND (trashed != 0) = (id = ?)`, ids[c], ids[d], ids[c]); n != 2 {
		t.Fatalf("%s (trashed after the cut-off) or %s (never trashed) was touched", c, d)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_purged`); n != 2 {
		t.Fatalf("%d items purged after the retry, want 2", n)
	}
}

// TestBulkCreateOnce: a bulk create files its items under one op id; when
// a step's acknowledgement is lost after it landed, the walk stops
// unknown, and the same op id brought back answers the items filed and
// files the rest: every item once.
func TestBulkCreateOnce(t *testing.T) {
	r := newRig(t, time.Now())
	r.project("ENG")
	items := make([]tracker.NewWorkItem, 5)
	for i := range items {
		items[i] = tracker.NewWorkItem{Title: fmt.Sprintf("Step %d", i+1), Tags: []string{"plan"}}
	}
	w := r.op("bulk_create", "ENG")
	r.log.arm(3, true)
	first, err := r.svc.BulkCreate(context.Background(), w, "ENG", items)
	if err != nil || first.Outcome != engine.Unknown || len(first.Steps) != 3 {
		t.Fatalf("with the third acknowledgement lost: %+v %v", first, err)
	}
	var prog progressLog
	out, err := r.svc.BulkCreate(prog.ctx(), w, "ENG", items)
	if err != nil || out.Outcome != engine.Applied || len(out.Steps) != 5 {
		t.Fatalf("brought back: %+v %v", out, err)
	}
	for i, st := range out.Steps {
		if st.Task != fmt.Sprintf("ENG-%d", i+1) {
			t.Errorf("step %d names %s, want ENG-%d", i, st.Task, i+1)
		}
	}
	if prog.last() != [2]int{5, 5} {
		t.Errorf("progress told %v", prog.seen)
	}
	if got := rowCount(t, r, `SELECT count(*) FROM tracker_items`); got != 5 {
		t.Fatalf("%d items filed, want 5", got)
	}
	before := r.log.appends.Load()
	if _, err := r.svc.BulkCreate(context.Background(), w, "ENG", items); err != nil {
		t.Fatal(err)
	}
	if got := r.log.appends.Load(); got != before || rowCount(t, r, `SELECT count(*) FROM tracker_items`) != 5 {
		t.Fatalf("a third run appended %d records", got-before)
	}
	_, err = r.svc.BulkCreate(context.Background(), r.op("bulk_create", "ENG"), "ENG", []tracker.NewWorkItem{{Title: "x", DependsOn: []string{"ENG-1"}}})
	refusedSaying(t, err, engine.CodeInvalidArgument, "update_work_item")
}
