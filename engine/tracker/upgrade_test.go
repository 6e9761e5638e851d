package tracker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestRetainedProjectRecordDefersItsItems: a record about a project that
// this build cannot decode (a bulk change from a newer build, scope
// project:ENG) is retained, and then every read and write about an item in
// ENG refuses deferred — an item's scope declares its project membership —
// while OPS's items read and write as before.
func TestRetainedProjectRecordDefersItsItems(t *testing.T) {
	r := newRig(t, time.Now())
	r.project("ENG")
	r.project("OPS")
	eng := r.item("ENG", "in eng", "")
	ops := r.item("OPS", "in ops", "")
	ctx := context.Background()
	data, err := record.Encode(&record.Record{Kind: "tracker.bulk_from_the_future", Version: record.FormatVersion + 1, Writer: "n9", Generation: 1,
		Subject: trackrec.ProjectSubject("ENG"), Scope: []string{trackrec.ProjectScope("ENG")}, Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.n.Log(engine.DomainTracker).Publish(ctx, trackrec.ProjectSubject("ENG"), data, "", nil); err != nil {
		t.Fatal(err)
	}
	_, err = r.svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, eng)
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeDeferred {
		t.Fatalf("a read of %s under a retained record about its project: %v, want deferred", eng, err)
	}
	title := "renamed"
	_, err = r.svc.UpdateWorkItem(ctx, r.op("update_work_item", eng), eng, 0, tracker.ItemPatch{Title: &title})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeDeferred {
		t.Fatalf("a write to %s under a retained record about its project: %v, want deferred", eng, err)
	}
	w, err := r.svc.UpdateWorkItem(ctx, r.op("update_work_item", ops), ops, 0, tracker.ItemPatch{Title: &title})
	enginetest.Landed(t, r.n, engine.DomainTracker, w.WriteResult, err)
	if got := r.get(ops); got.Title != title {
		t.Fatalf("%s reads %q after its update", ops, got.Title)
	}
}

// TestPurgeScopeNamesItsSubtree: a purge's declared scope names every task
// it rewrites, its whole subtree among them (a grandchild too), and the
// project the item is in.
func TestPurgeScopeNamesItsSubtree(t *testing.T) {
	r := newRig(t, time.Now())
	r.project("ENG")
	root := r.item("ENG", "root", "")
	child := r.item("ENG", "child", root)
	grandchild := r.item("ENG", "grandchild", child)
	ids := map[string]string{}
	for _, k := range []string{root, child, grandchild} {
		ids[k] = r.get(k).ID
	}
	ctx := context.Background()
	w, err := r.svc.PurgeWorkItem(ctx, r.op("purge_work_item", root), root)
	enginetest.Landed(t, r.n, engine.DomainTracker, w.WriteResult, err)
	msg, err := r.n.Log(engine.DomainTracker).Get(ctx, enginetest.LastWrite(t, r.n, engine.DomainTracker))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Decode(msg.Data)
	if err != nil || rec.Kind != trackrec.KindPurge {
		t.Fatalf("the last record is %+v (%v), want the purge", rec, err)
	}
	for _, want := range []string{trackrec.ItemScope(ids[root]), trackrec.ItemScope(ids[child]), trackrec.ItemScope(ids[grandchild]), trackrec.InProject("ENG")} {
		if !slices.Contains(rec.Scope, want) {
			t.Errorf("the purge's scope %v lacks %s", rec.Scope, want)
		}
	}
}
