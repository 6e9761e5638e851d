package tracker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestGetWorkItemOneStatement: get_work_item's one statement (the read
// without a transaction) answers exactly what its statements in a read
// transaction answer, for items carrying everything an item can: tags,
// watchers, authored and mirror edges, fields, a parent, more comments
// than a read shows (edited, deleted, bodies of awkward text), trashed,
// merged, moved and read by the key it held before; and GetWorkItem
// serves that answer at the checkpoint the statement read.
func TestGetWorkItemOneStatement(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	k := everyKindOfItem(t, r)
	db := r.n.DB()
	for _, key := range []string{k.full, k.parent, k.other, k.dup, k.gone, k.moved, "OPS-1"} {
		one, inTx, seen, err := tracker.GetWorkItemBothWays(ctx, r.svc, db, key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		a, _ := json.Marshal(one)
		b, _ := json.Marshal(inTx)
		if string(a) != string(b) {
			t.Fatalf("%s: one statement answered\n%s\na transaction answered\n%s", key, a, b)
		}
		got, err := r.svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, key)
		if err != nil || got.SeenThrough.Seq != seen {
			t.Fatalf("%s: get_work_item at %d, the statement at %d: %v", key, got.SeenThrough.Seq, seen, err)
		}
		g, _ := json.Marshal(tracker.ItemRead{Item: got.Item, Comments: got.Comments})
		if string(g) != string(b) {
			t.Fatalf("%s: get_work_item answered\n%s\nnot\n%s", key, g, b)
		}
	}
	// The statement shows what the item carries, so the comparison above
	// compared something: the newest comments, the sets, the marks.
	one, _, _, _ := tracker.GetWorkItemBothWays(ctx, r.svc, db, k.full)
	it, cs := one.Item, one.Comments
	if len(cs) != tracker.MaxReadComments || cs[0].ID <= k.firstComment || cs[len(cs)-1].ID <= cs[0].ID ||
		fmt.Sprint(it.Tags) != "[alpha zeta ünïcode]" || fmt.Sprint(it.Watchers) != "[alice bob]" || len(it.Edges) != 3 ||
		it.Parent != k.parent || it.Priority != tracker.PriorityHigh || it.Due == "" || it.Type != tracker.TypeBug || it.Estimate == 0 {
		t.Fatalf("the full item: %+v, %d comments", it, len(cs))
	}
	edited := 0
	for _, c := range cs {
		if c.Body == "edited" && c.Version > c.ID {
			edited++
		}
	}
	if edited != 1 {
		t.Fatalf("%d edited comments shown, want 1: %+v", edited, cs)
	}
	for key, want := range map[string]func(tracker.WorkItem) bool{
		k.gone:  func(it tracker.WorkItem) bool { return it.Trashed },
		k.dup:   func(it tracker.WorkItem) bool { return it.MergedInto == k.other },
		k.moved: func(it tracker.WorkItem) bool { return it.Key == "OPS-1" },
		"OPS-1": func(it tracker.WorkItem) bool { return it.Project == "OPS" },
	} {
		if one, _, _, _ := tracker.GetWorkItemBothWays(ctx, r.svc, db, key); !want(one.Item) {
			t.Fatalf("%s: %+v", key, one.Item)
		}
	}
}

// everyKind are the keys of the items everyKindOfItem files.
type everyKind struct {
	full, parent, other, dup, gone, moved string
	firstComment                          uint64
}

// everyKindOfItem files items carrying everything an item can carry.
func everyKindOfItem(t *testing.T, r *rig) everyKind {
	ctx := context.Background()
	r.project("ENG")
	r.project("OPS")
	parent := r.item("ENG", "epic", "")
	full := r.item("ENG", "the full one", parent)
	other, dup, gone := r.item("ENG", "other", ""), r.item("ENG", "duplicate", ""), r.item("ENG", "trashed", parent)
	moved := r.item("ENG", "moving", "")
	high, due, bug, est := tracker.PriorityHigh, "2026-03-31", tracker.TypeBug, 2.5
	up, err := r.svc.UpdateWorkItem(ctx, r.op("update", full), full, 0, tracker.ItemPatch{
		AddTags: []string{"zeta", "alpha", "ünïcode"}, AddWatchers: []string{"bob", "alice"}, Priority: &high, Due: &due, Type: &bug, Estimate: &est,
		AddEdges: []tracker.Edge{{Kind: "depends_on", Key: other}, {Kind: "relates_to", Key: moved}}})
	if err != nil || up.Outcome != engine.Applied {
		t.Fatalf("update: %+v %v", up, err)
	}
	if w, err := r.svc.UpdateWorkItem(ctx, r.op("update", other), other, 0, tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: "relates_to", Key: full}}}); err != nil || w.Outcome != engine.Applied {
		t.Fatalf("mirror: %+v %v", w, err)
	}
	bodies := []string{"plain", `quotes " and \ backslash`, "nul \x00 and control \x01\x1f", "line\nbreak\ttab", "<b>&amp;</b> \u2028\u2029 😀", "ünïcode ✓"}
	var first uint64
	for i := range tracker.MaxReadComments + 5 {
		cw, err := r.svc.Comment(ctx, r.op("comment", full), tracker.CommentInput{Key: full, Author: fmt.Sprintf("author%d", i%3), Body: bodies[i%len(bodies)]})
		if err != nil || cw.Comment == nil {
			t.Fatalf("comment %d: %+v %v", i, cw, err)
		}
		if i == 0 {
			first = cw.Comment.ID
		}
		if i == 10 || i == 20 { // one edited, one deleted, both among the newest
			in := tracker.CommentInput{Key: full, Author: cw.Comment.Author, CommentID: cw.Comment.ID, Body: "edited", Delete: i == 20}
			if w, err := r.svc.Comment(ctx, r.op("edit_comment", full), in); err != nil || w.Outcome != engine.Applied {
				t.Fatalf("edit %d: %+v %v", i, w, err)
			}
		}
	}
	for _, step := range []func() (tracker.ItemWrite, error){
		func() (tracker.ItemWrite, error) { return r.svc.TrashWorkItem(ctx, r.op("trash", gone), gone) },
		func() (tracker.ItemWrite, error) {
			return r.svc.MergeWorkItems(ctx, r.op("merge", other), other, []string{dup})
		},
		func() (tracker.ItemWrite, error) { return r.svc.MoveWorkItem(ctx, r.op("move", moved), moved, "OPS") },
	} {
		if w, err := step(); err != nil || w.Outcome != engine.Applied {
			t.Fatalf("gesture: %+v %v", w, err)
		}
	}
	return everyKind{full: full, parent: parent, other: other, dup: dup, gone: gone, moved: moved, firstComment: first}
}

// TestEmptySetsNeedNoDecoding: what both item reads give as the sets of
// an item with no tags, watchers, edges or comments is what noSets takes
// for empty (decoded, it would be the same empty sets), and one tag makes
// them not empty.
func TestEmptySetsNeedNoDecoding(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	key := r.item("ENG", "Bare", "")
	load, get, loadEmpty, getEmpty, err := tracker.SetsColumns(ctx, r.n.DB(), key)
	if err != nil || !loadEmpty || !getEmpty {
		t.Fatalf("an item with no sets reads %q and %q (%v): want both taken for empty", load, get, err)
	}
	w, err := r.svc.UpdateWorkItem(ctx, r.op("update", key), key, 0, tracker.ItemPatch{AddTags: []string{"x"}})
	if err != nil || w.Outcome != engine.Applied {
		t.Fatalf("tag it: %+v %v", w, err)
	}
	load, get, loadEmpty, getEmpty, err = tracker.SetsColumns(ctx, r.n.DB(), key)
	if err != nil || loadEmpty || getEmpty {
		t.Fatalf("a tagged item reads %q and %q (%v): want neither taken for empty", load, get, err)
	}
	ir, err := r.svc.GetWorkItem(ctx, engine.ReadOptions{}, key)
	if err != nil || len(ir.Item.Tags) != 1 || ir.Item.Tags[0] != "x" {
		t.Fatalf("get_work_item of the tagged item: %+v %v", ir.Item.Tags, err)
	}
}
