package tracker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// refusedWith fails unless err is a refusal of code whose message holds
// every one of want.
func refusedWith(t *testing.T, what string, err error, code engine.Code, want ...string) {
	t.Helper()
	ref, ok := engine.AsRefusal(err)
	if !ok || ref.Code != code {
		t.Fatalf("%s: want %s, got %v", what, code, err)
	}
	for _, w := range want {
		if !strings.Contains(ref.Message, w) {
			t.Fatalf("%s: message %q lacks %q", what, ref.Message, w)
		}
	}
}

// recordVersion is the format version of the record a write landed as,
// read off the broker's stream.
func recordVersion(t *testing.T, r *rig, position string) int {
	t.Helper()
	p, err := engine.ParsePosition(position)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := r.log.Get(context.Background(), p.Seq)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Decode(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Version
}

// TestItemFieldsRoundTripAndStampTheirRecords: priority, due, estimate and
// type are written, read back and changed; a record carrying one is
// stamped format version 2, one carrying none stays version 1; bad values
// are refused before anything is published.
func TestItemFieldsRoundTripAndStampTheirRecords(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	w, err := r.svc.CreateWorkItem(ctx, r.op("create_work_item", "ENG"), tracker.NewWorkItem{Project: "ENG", Title: "crash on save",
		Priority: tracker.PriorityHigh, Due: "2026-03-31", Estimate: 2.5, Type: tracker.TypeBug})
	if err != nil || w.Item == nil {
		t.Fatal(w, err)
	}
	if it := r.get(w.Item.Key); it.Priority != "high" || it.Due != "2026-03-31" || it.Estimate != 2.5 || it.Type != "bug" {
		t.Fatalf("fields read back %+v", it)
	}
	if v := recordVersion(t, r, w.Position); v != trackrec.FieldsFormat {
		t.Fatalf("a create carrying fields is at version %d", v)
	}
	plain := r.item("ENG", "plain", "")
	if it := r.get(plain); it.Priority != "none" || it.Type != "task" || it.Due != "" || it.Estimate != 0 {
		t.Fatalf("defaults %+v", it)
	}
	up, err := r.svc.UpdateWorkItem(ctx, r.op("update", plain), plain, 0, tracker.ItemPatch{Title: ptr("plainer")})
	if err != nil || recordVersion(t, r, up.Position) != 1 {
		t.Fatalf("an update carrying no field: %v, version %d", err, recordVersion(t, r, up.Position))
	}
	urgent, clear, zero := tracker.PriorityUrgent, "", 0.0
	up, err = r.svc.UpdateWorkItem(ctx, r.op("update", w.Item.Key), w.Item.Key, 0, tracker.ItemPatch{Priority: &urgent, Due: &clear, Estimate: &zero})
	if err != nil || up.Item == nil || up.Item.Priority != "urgent" || up.Item.Due != "" || up.Item.Estimate != 0 || up.Item.Type != "bug" {
		t.Fatalf("update %+v %v", up.Item, err)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_history WHERE field IN ('priority', 'due', 'estimate')`); n != 6 {
		t.Fatalf("%d field history rows, want 6 (three at create, three at update)", n)
	}
	before := rowCount(t, r, `SELECT count(*) FROM tracker_history`)
	bad := []tracker.NewWorkItem{
		{Project: "ENG", Title: "x", Due: "2026-13-40"},
		{Project: "ENG", Title: "x", Priority: "p0"},
		{Project: "ENG", Title: "x", Type: "story"},
		{Project: "ENG", Title: "x", Estimate: -1},
	}
	for _, in := range bad {
		_, err := r.svc.CreateWorkItem(ctx, r.op("create_work_item", "ENG"), in)
		refusedWith(t, "bad fields", err, engine.CodeInvalidArgument)
	}
	if after := rowCount(t, r, `SELECT count(*) FROM tracker_history`); after != before {
		t.Fatal("a refused create wrote rows")
	}
}

func ptr[T any](v T) *T { return &v }

// TestTransitionsAndDependencyCycles: a transition not allowed from the
// item's status is refused naming the status and the transitions it
// allows; an allowed one moves the status; a dependency closing a cycle is
// refused with the cycle named.
func TestTransitionsAndDependencyCycles(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	a := r.item("ENG", "a", "")
	_, err := r.svc.UpdateWorkItem(ctx, r.op("update", a), a, 0, tracker.ItemPatch{Transition: "unblock"})
	refusedWith(t, "unblock from open", err, engine.CodeInvalidArgument, "ENG-1 is open", "start, block, finish, cancel")
	_, err = r.svc.UpdateWorkItem(ctx, r.op("update", a), a, 0, tracker.ItemPatch{Transition: "start", Status: ptr("done")})
	refusedWith(t, "status and transition", err, engine.CodeInvalidArgument, "not both")
	for _, step := range []struct{ transition, status string }{{"start", "in_progress"}, {"block", "blocked"}, {"unblock", "in_progress"}, {"finish", "done"}, {"reopen", "open"}} {
		w, err := r.svc.UpdateWorkItem(ctx, r.op("update", a), a, 0, tracker.ItemPatch{Transition: step.transition})
		if err != nil || w.Item.Status != step.status {
			t.Fatalf("%s: %v %v", step.transition, w.Item, err)
		}
	}
	if it := r.get(a); it.Reopens != 1 {
		t.Fatalf("reopen counted %d", it.Reopens)
	}

	// ENG-2 depends on ENG-3, ENG-3 on ENG-4: ENG-4 depending on ENG-2
	// would close the cycle.
	b := r.item("ENG", "b", "")
	c := r.item("ENG", "c", "")
	d := r.item("ENG", "d", "")
	for _, e := range [][2]string{{b, c}, {c, d}} {
		if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", e[0]), e[0], 0, tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: e[1]}}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.svc.UpdateWorkItem(ctx, r.op("update", d), d, 0, tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: b}}})
	refusedWith(t, "cycle of three", err, engine.CodeInvalidArgument, "ENG-4 depends on ENG-2, which depends on ENG-3, which depends on ENG-4")
	_, err = r.svc.UpdateWorkItem(ctx, r.op("update", c), c, 0, tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: b}}})
	refusedWith(t, "cycle of two", err, engine.CodeInvalidArgument, "ENG-3 depends on ENG-2, which depends on ENG-3")
	// Not a cycle: ENG-2 depending on ENG-4 as well.
	if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", b), b, 0, tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: d}}}); err != nil {
		t.Fatalf("a diamond is not a cycle: %v", err)
	}
}
