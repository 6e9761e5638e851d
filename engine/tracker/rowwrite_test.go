package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestRowWriteSetsWhatMoved: an update that moves a title alongside an
// indexed column (status, assignee, parent) writes every column that moved
// and keeps the ones that did not, and the indexes over them answer the
// new values (a row write names only the index groups that moved).
func TestRowWriteSetsWhatMoved(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	r.item("ENG", "root", "")
	r.item("ENG", "leaf", "")
	update := func(p tracker.ItemPatch) {
		t.Helper()
		if out, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-2", 0, p); err != nil || out.Outcome != engine.Applied {
			t.Fatalf("update %+v: %+v %v", p, out, err)
		}
	}
	s := func(v string) *string { return &v }
	update(tracker.ItemPatch{Title: s("one"), Status: s("in_progress"), Assignee: s("ana")})
	update(tracker.ItemPatch{Title: s("two"), Parent: s("ENG-1")})
	update(tracker.ItemPatch{Title: s("three"), Description: s("moved nothing indexed")})
	it := r.get("ENG-2")
	if it.Title != "three" || it.Description != "moved nothing indexed" || it.Status != "in_progress" || it.Assignee != "ana" || it.Parent != "ENG-1" || it.Key != "ENG-2" {
		t.Fatalf("ENG-2 reads %+v", it)
	}
	// Each index answers the row as it is now.
	for _, c := range []struct{ f tracker.ListFilter }{
		{tracker.ListFilter{Project: "ENG", Status: "in_progress"}},
		{tracker.ListFilter{Assignee: "ana"}},
		{tracker.ListFilter{Parent: "ENG-1"}},
	} {
		l, err := r.svc.ListWorkItems(ctx, engine.ReadOptions{}, c.f)
		if err != nil || len(l.Items) != 1 || l.Items[0].Key != "ENG-2" {
			t.Fatalf("list %+v: %+v %v", c.f, l.Items, err)
		}
	}
	update(tracker.ItemPatch{Title: s("four"), Status: s("open"), Assignee: s(""), Parent: s("")})
	for _, f := range []tracker.ListFilter{{Project: "ENG", Status: "in_progress"}, {Assignee: "ana"}, {Parent: "ENG-1"}} {
		if l, err := r.svc.ListWorkItems(ctx, engine.ReadOptions{}, f); err != nil || len(l.Items) != 0 {
			t.Fatalf("list %+v after the moves back: %+v %v", f, l.Items, err)
		}
	}
	var check string
	if err := r.n.DB().QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
}
