package node_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

func digestOf(tool string, kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return ledger.Digest(tool, m)
}

func wantCode(t *testing.T, err error, code engine.Code) *engine.Refusal {
	t.Helper()
	ref, ok := engine.AsRefusal(err)
	if !ok || ref.Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	return ref
}

// TestOpIDComesBackOnlyWithItsCall: an op id brought back with other
// arguments, or with a write to another object, is refused op_reused
// before anything is written, whether the ledger holds it or it never
// landed; a client-minted key reused after a lost answer files one item.
func TestOpIDComesBackOnlyWithItsCall(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	dA := digestOf("create_work_item", "project", "ENG", "title", "a")
	first, err := svc.CreateWorkItem(ctx, engine.WriteOptions{Digest: dA}, tracker.NewWorkItem{Project: "ENG", Title: "a"})
	if err != nil || first.Outcome != engine.Applied {
		t.Fatal(first, err)
	}
	before := lastSeq(t, n)
	// Same id, other arguments: the ledger holds it.
	_, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID, Digest: digestOf("create_work_item", "project", "ENG", "title", "b")}, tracker.NewWorkItem{Project: "ENG", Title: "b"})
	ref := wantCode(t, err, engine.CodeOpReused)
	if ref.Position == nil || ref.Position.Token() != first.Position {
		t.Fatalf("op_reused names %v, want where it landed (%s)", ref.Position, first.Position)
	}
	// Same id with a write to another object.
	svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "second"})
	before = lastSeq(t, n)
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID}, "ENG-2", 0, tracker.ItemPatch{Title: ptr("x")})
	wantCode(t, err, engine.CodeOpReused)
	// An id minted for one call, never landed, brought back with another.
	never, _ := ledger.MintFor(time.Now(), "update", "ENG-1", digestOf("update_work_item", "key", "ENG-1", "title", "p"))
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: never.String(), Digest: digestOf("update_work_item", "key", "ENG-1", "title", "q")}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("q")})
	wantCode(t, err, engine.CodeOpReused)
	if after := lastSeq(t, n); after != before {
		t.Fatalf("refused calls published: %d -> %d", before, after)
	}

	// A client-minted key: the first answer is lost, the retry under the
	// same key files one item.
	key := must(uuid.NewV7()).String()
	dK := digestOf("create_work_item", "project", "ENG", "title", "client")
	a, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: key, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || a.Outcome != engine.Applied || !namesKey(a.OpID, key, "create_work_item-ENG") {
		t.Fatal(a, err)
	}
	seq := lastSeq(t, n)
	b, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: key, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || b.Item.Key != a.Item.Key || b.Position != a.Position || lastSeq(t, n) != seq {
		t.Fatalf("client key retry: %+v %v", b, err)
	}
	// The same key sent with a write to another object.
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: key}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("z")})
	wantCode(t, err, engine.CodeOpReused)
	// The op_id the answer gave names the same operation as the key.
	c, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: a.OpID, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || c.Item.Key != a.Item.Key || c.Position != a.Position || lastSeq(t, n) != seq {
		t.Fatalf("client key retried under its answer's op_id: %+v %v", c, err)
	}
	// A key minted an hour ago is not one minted before its first attempt,
	// and no write under it landed.
	old, _ := ledger.NewV7At(time.Now().Add(-time.Hour))
	_, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: old.String()}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	wantCode(t, err, engine.CodeInvalidArgument)
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 3 {
		t.Fatalf("%d items, want 3", c)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSecondCopyAppliesNothing: a second copy of a create on the log (an
// append past the duplicate window that no arbitration stopped) files no
// second item and applies nothing; the op stays answered by its first copy.
func TestSecondCopyAppliesNothing(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	first, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "once"})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"id": first.Item.ID, "project": "ENG", "number": 2, "title": "twice", "status": "open"})
	data, _ := record.Encode(&record.Record{Kind: tracker.KindCreateWorkItem, Version: 1, OpID: first.OpID, Writer: "n1", Generation: 1,
		Subject: "crewlet.tracker.project.ENG", Payload: payload})
	ack, err := n.Log(engine.DomainTracker).Publish(ctx, "crewlet.tracker.project.ENG", data, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 1 {
		t.Fatalf("%d items", c)
	}
	got, _ := svc.GetWorkItem(ctx, lin(), "ENG-1")
	if got.Item.Title != "once" {
		t.Fatalf("second copy applied: %+v", got.Item)
	}
	next, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "next"})
	if err != nil || next.Item.Key != "ENG-2" {
		t.Fatalf("next: %+v %v", next, err)
	}
}

// TestLedgerSweepAndWatermark: 40 simulated days; rows older than 30 days
// are swept and the watermark moves; an op minted before it whose row is
// gone is answered unknown before anything is published (logged
// statelog_write_unvouched), except a create, answered from its row.
func TestLedgerSweepAndWatermark(t *testing.T) {
	ctx := context.Background()
	clock := enginetest.NewClock(time.Now())
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Clock: clock, Logger: rec.Logger()})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	created, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	if err != nil {
		t.Fatal(err)
	}
	upd, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", created.Item.Version, tracker.ItemPatch{Title: ptr("older")})
	if err != nil || upd.Outcome != engine.Applied {
		t.Fatal(upd, err)
	}
	clock.Advance(40 * 24 * time.Hour)
	deleted, err := n.SweepLedger(ctx)
	if err != nil || deleted != 3 {
		t.Fatalf("sweep deleted %d, %v", deleted, err)
	}
	wm, lost, err := ledger.Watermark(ctx, n.DB())
	if err != nil || !lost || !wm.Equal(time.UnixMilli(clock.Now().Add(-ledger.Retention).UnixMilli())) {
		t.Fatalf("watermark %v %v %v", wm, lost, err)
	}
	before := lastSeq(t, n)
	again, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: upd.OpID}, "ENG-1", created.Item.Version, tracker.ItemPatch{Title: ptr("older")})
	if err != nil || again.Outcome != engine.Unknown || again.Position != "" {
		t.Fatalf("unvouched update: %+v %v", again, err)
	}
	lines := rec.Lines(engine.EvWriteUnvouched)
	if len(lines) != 1 || lines[0].Attrs[engine.LogOpID] != upd.OpID || lines[0].Attrs["minted_at"] == "" || lines[0].Attrs["refusal"] != "stale" {
		t.Fatalf("unvouched lines: %+v", lines)
	}
	c, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: created.OpID}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	if err != nil || c.Outcome != engine.Applied || c.Item.Key != "ENG-1" || c.Position != created.Position {
		t.Fatalf("unvouched create: %+v %v", c, err)
	}
	if after := lastSeq(t, n); after != before {
		t.Fatalf("unvouched ops published: %d -> %d", before, after)
	}
	// An op minted now is vouched for and lands as usual.
	fresh, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("new")})
	if err != nil || fresh.Outcome != engine.Applied {
		t.Fatalf("fresh: %+v %v", fresh, err)
	}
}

// TestPublishUnknown: with the broker stopped, nothing can be established
// about a write: unknown, logged statelog_publish_unknown with its op id.
func TestPublishUnknown(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Logger: rec.Logger(), PublishTimeout: 300 * time.Millisecond})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "x"}); err != nil {
		t.Fatal(err)
	}
	n.Broker().Server.Shutdown()
	w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("y")})
	if err != nil || w.Outcome != engine.Unknown || w.Position != "" || w.OpID == "" {
		t.Fatalf("%+v %v", w, err)
	}
	lines := rec.Lines(engine.EvPublishUnknown)
	if len(lines) != 1 || lines[0].Attrs[engine.LogOpID] != w.OpID {
		t.Fatalf("publish_unknown lines: %+v", lines)
	}
}

// namesKey reports whether the op id an answer gave names the operation a
// client minted as key, under this name.
func namesKey(answered, key, name string) bool {
	id, err := ledger.Parse(answered)
	return err == nil && ledger.IsClientForm(id.UUID) && ledger.KeyOf(id.UUID).String() == key && id.Verb+"-"+id.Object == name
}
