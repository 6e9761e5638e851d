package tracker_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestWriteAnswersWithTheApplierRead: a create and an update answer with
// the item the applier read right after their records, not a read of
// their own, and that item is the one a linearizable get then returns.
func TestWriteAnswersWithTheApplierRead(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	rep := r.n.Replica(engine.DomainTracker)
	before := rep.Stats().AnswersFromApply
	created, err := r.svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "made"})
	if err != nil || created.Outcome != engine.Applied || created.Item == nil {
		t.Fatalf("create: %+v %v", created, err)
	}
	title, status := "changed", "in_progress"
	updated, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, created.Item.Key, 0, tracker.ItemPatch{Title: &title, Status: &status, AddTags: []string{"x"}})
	if err != nil || updated.Outcome != engine.Applied || updated.Item == nil {
		t.Fatalf("update: %+v %v", updated, err)
	}
	if got := rep.Stats().AnswersFromApply - before; got != 2 {
		t.Fatalf("%d of 2 writes answered with the applier's read", got)
	}
	got, err := r.svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, created.Item.Key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*updated.Item, got.Item) {
		t.Fatalf("the update answered\n%+v\nand a get reads\n%+v", *updated.Item, got.Item)
	}
	if updated.Item.Title != title || updated.Item.Status != status || len(updated.Item.Tags) != 1 || created.Item.Title != "made" {
		t.Fatalf("answers: created %+v, updated %+v", created.Item, updated.Item)
	}
	// A retry under the same id is answered from the ledger, without a
	// decision: still with the item.
	again := r.op("update", created.Item.Key)
	first, err := r.svc.UpdateWorkItem(ctx, again, created.Item.Key, 0, tracker.ItemPatch{Title: &title})
	if err != nil || first.Outcome != engine.Applied {
		t.Fatalf("update under an id: %+v %v", first, err)
	}
	retry, err := r.svc.UpdateWorkItem(ctx, again, created.Item.Key, 0, tracker.ItemPatch{Title: &title})
	if err != nil || retry.Outcome != engine.Applied || retry.Item == nil || retry.Item.Key != created.Item.Key {
		t.Fatalf("retry: %+v %v", retry, err)
	}
	// A key nobody filed: not_found, decided at the log's end.
	if _, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-99", 0, tracker.ItemPatch{Title: &title}); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("update of ENG-99: %v, want not_found", err)
	}
}
