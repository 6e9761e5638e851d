package tracker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

func idOf(t *testing.T, r *rig, key string) string {
	t.Helper()
	var id string
	if err := r.n.DB().QueryRow(`SELECT id FROM tracker_item_keys WHERE key = ?`, key).Scan(&id); err != nil {
		t.Fatalf("id of %s: %v", key, err)
	}
	return id
}

func rowCount(t *testing.T, r *rig, q string, args ...any) int {
	t.Helper()
	var n int
	if err := r.n.DB().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// publishStale puts a record about the task id straight on the tracker's
// log, as a writer (n9) that never saw what this node's rows hold would,
// and returns its sequence.
func publishStale(t *testing.T, r *rig, kind, opID, id string, scope []string, payload any) uint64 {
	t.Helper()
	body, _ := json.Marshal(payload)
	rec := &record.Record{Kind: kind, Version: 1, OpID: opID, Writer: "n9", Generation: 1,
		Subject: "crewlet.tracker.item." + id, Scope: scope, Payload: body}
	data, err := record.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := r.n.Log(engine.DomainTracker).Publish(context.Background(), rec.Subject, data, rec.OpID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

// heldByDeletedGate waits until the record at seq is applied and checks
// that the deletion gate held it, the stale writer (n9) named.
func heldByDeletedGate(t *testing.T, r *rig, seq uint64) {
	t.Helper()
	ctx := context.Background()
	if err := r.svc.Replica().WaitApplied(ctx, seq); err != nil {
		t.Fatal(err)
	}
	gate, writer, ok, err := r.n.Replica(engine.DomainTracker).GatedAt(ctx, seq)
	if err != nil || !ok || gate != trackapply.GateDeleted || writer != "n9" {
		t.Fatalf("record at %d: gated=%v gate=%q writer=%q err=%v, want held by %s for n9", seq, ok, gate, writer, err, trackapply.GateDeleted)
	}
}

// TestPurgeGatesEveryLaterRecord: a purge destroys the task, rewrites what
// pointed at it, and every later record about it applies nowhere — a write
// through the service is refused deleted, and a record a stale writer
// publishes straight onto the stream after the purge is dropped by the
// deletion gate, logged statelog_record_gated gate=deleted.
func TestPurgeGatesEveryLaterRecord(t *testing.T) {
	rec := enginetest.NewRecorder()
	r := newRig(t, time.Now(), node.Config{Logger: rec.Logger()})
	ctx := context.Background()
	scene(r)
	if out, err := r.svc.UpdateWorkItem(ctx, r.op("update", "ENG-5"), "ENG-5", 0, tracker.ItemPatch{
		AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: "ENG-2"}}}); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("dependency: %+v %v", out, err)
	}
	if _, err := r.svc.CommentOnWorkItem(ctx, r.op("comment", "ENG-2"), "ENG-2", "ana", "a comment about it"); err != nil {
		t.Fatal(err)
	}
	victim := idOf(t, r, "ENG-2")
	parent := idOf(t, r, "ENG-1")
	pr, err := r.svc.PurgeWorkItem(ctx, r.op("purge", "ENG-2"), "ENG-2")
	if err != nil || pr.Outcome != engine.Applied {
		t.Fatalf("purge: %+v %v", pr, err)
	}
	for _, q := range []string{`SELECT count(*) FROM tracker_items WHERE id = ?`, `SELECT count(*) FROM tracker_edges WHERE item = ?1 OR other = ?1`,
		`SELECT count(*) FROM tracker_comments WHERE item = ?`, `SELECT count(*) FROM tracker_history WHERE item = ?`} {
		if n := rowCount(t, r, q, victim); n != 0 {
			t.Fatalf("%s: %d rows left after the purge", q, n)
		}
	}
	if r.get("ENG-4").Parent != "ENG-1" || idOf(t, r, "ENG-1") != parent {
		t.Fatalf("the purged task's child was not re-filed under its parent: %+v", r.get("ENG-4"))
	}
	if es := r.get("ENG-5").Edges; len(es) != 0 {
		t.Fatalf("the dependent still points at the purged task: %+v", es)
	}
	// A write about it, through the service: refused deleted.
	title := "back"
	_, err = r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-2", 0, tracker.ItemPatch{Title: &title})
	if engine.CodeOf(err) != engine.CodeDeleted {
		t.Fatalf("update of a purged task: %v, want deleted", err)
	}
	// A stale writer that never saw the purge publishes its record anyway.
	ack := publishStale(t, r, trackrec.KindUpdateWorkItem, r.op("update", "ENG-2").OpID, victim, []string{trackrec.ItemScope(victim)},
		map[string]any{"id": victim, "title": "resurrected"})
	// And one about another task that names the purged one in its scope.
	other := idOf(t, r, "ENG-5")
	ack2 := publishStale(t, r, trackrec.KindMirrorEdges, r.op("mirror", "x").OpID, other, []string{trackrec.ItemScope(other), trackrec.ItemScope(victim)},
		map[string]any{"id": other, "add": []map[string]string{{"kind": "blocks", "other": victim}}})
	for _, seq := range []uint64{ack, ack2} {
		heldByDeletedGate(t, r, seq)
	}
	if n := rowCount(t, r, `SELECT count(*) FROM tracker_items WHERE id = ?`, victim); n != 0 {
		t.Fatal("a record published after the purge resurrected the task")
	}
	lines := rec.Lines(engine.EvRecordGated)
	if len(lines) != 2 || lines[0].Attrs["gate"] != "deleted" {
		t.Fatalf("statelog_record_gated lines: %+v", lines)
	}
}

// TestScopedThroughStopsAVersionOnlyComparison: merging a duplicate into
// ENG-1 is a record about the duplicate that rewrites ENG-1's rows (its
// mirror edge, the watchers carried over). ENG-1's own version does not
// move; its scoped_through does. An if_match naming the version read
// before the merge — which a version-only comparison would let through —
// is refused stale, and the item answers max(version, scoped_through).
func TestScopedThroughStopsAVersionOnlyComparison(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	scene(r)
	// Merge one duplicate by its step alone: a merge record about ENG-5.
	if out, err := r.svc.MergeWorkItems(ctx, engine.WriteOptions{}, "ENG-1", []string{"ENG-5"}); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("merge: %+v %v", out, err)
	}
	var version, scoped uint64
	if err := r.n.DB().QueryRow(`SELECT version, scoped_through FROM tracker_items WHERE key = 'ENG-1'`).Scan(&version, &scoped); err != nil {
		t.Fatal(err)
	}
	// The unmark step is about ENG-1 itself, so find the merge step's seq.
	var mergeSeq uint64
	if err := r.n.DB().QueryRow(`SELECT max(seq) FROM tracker_history WHERE item = (SELECT id FROM tracker_items WHERE key = 'ENG-1') AND field = 'watcher'`).Scan(&mergeSeq); err != nil {
		t.Fatal(err)
	}
	if scoped != mergeSeq {
		t.Fatalf("scoped_through %d, want the merge step's %d", scoped, mergeSeq)
	}
	// A relation from ENG-6: its mirror on ENG-1 is a record about ENG-1.
	if out, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-6", 0, tracker.ItemPatch{
		AddEdges: []tracker.Edge{{Kind: tracker.EdgeRelatesTo, Key: "ENG-1"}}}); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("relation: %+v %v", out, err)
	}
	// Purging ENG-6 is a record about ENG-6 that rewrites ENG-1 (the
	// relation's mirror goes), with nothing about ENG-1 after it.
	v2 := r.get("ENG-1").Version
	if _, err := r.svc.PurgeWorkItem(ctx, engine.WriteOptions{}, "ENG-6"); err != nil {
		t.Fatal(err)
	}
	if err := r.n.DB().QueryRow(`SELECT version, scoped_through FROM tracker_items WHERE key = 'ENG-1'`).Scan(&version, &scoped); err != nil {
		t.Fatal(err)
	}
	if uint64(version) != v2 || scoped <= version {
		t.Fatalf("after the purge: version %d (was %d) scoped_through %d; want version unmoved and scoped_through past it", version, v2, scoped)
	}
	if got := r.get("ENG-1").Version; got != scoped {
		t.Fatalf("get answers version %d, want max(version, scoped_through) = %d", got, scoped)
	}
	title := "decided against an old read"
	_, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", version, tracker.ItemPatch{Title: &title})
	if engine.CodeOf(err) != engine.CodeStale {
		t.Fatalf("if_match on the version column alone (%d): %v, want stale", version, err)
	}
	if _, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", scoped, tracker.ItemPatch{Title: &title}); err != nil {
		t.Fatalf("if_match on max(version, scoped_through): %v", err)
	}
}

// TestIfMatchSeesABulkChange: the case that keeps the tracker's if_match
// on max(version, scoped_through) rather than the version column alone,
// which is what the seeds' page names. A bulk update is a record about
// the project: it changes ENG-1's status without moving ENG-1's version,
// only its scoped_through. A caller that read ENG-1 before the bulk change
// and writes its status back under if_match would, compared on the
// version alone, be let through and silently undo the bulk change — a
// lost update the caller cannot see. Compared on what reads answer, it is
// refused stale and reads again.
func TestIfMatchSeesABulkChange(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	key := r.item("ENG", "one", "")
	read := r.get(key)
	done := "done"
	if w, err := r.svc.BulkUpdate(ctx, engine.WriteOptions{}, "ENG", []string{key}, tracker.BulkPatch{Status: &done}); err != nil || w.Outcome != engine.Applied {
		t.Fatalf("bulk: %+v %v", w, err)
	}
	var version, scoped uint64
	err := r.n.DB().QueryRow(`SELECT version, scoped_through FROM tracker_items WHERE key = ?`, key).Scan(&version, &scoped)
	if err != nil {
		t.Fatal(err)
	}
	if version != read.Version || scoped <= version {
		t.Fatalf("after the bulk change: version %d (read %d), scoped_through %d; want the version unmoved", version, read.Version, scoped)
	}
	back := read.Status
	_, err = r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, key, read.Version, tracker.ItemPatch{Status: &back})
	if engine.CodeOf(err) != engine.CodeStale {
		t.Fatalf("a status written back under the version read before the bulk change: %v, want stale (a version-only comparison undoes the bulk change)", err)
	}
	if got := r.get(key); got.Status != done || got.Version != scoped {
		t.Fatalf("%s after the refused write: %+v, want the bulk's status at version %d", key, got, scoped)
	}
}

// TestSearchFindsTitlesDescriptionsCommentsTitleFirst.
func TestSearchFindsTitlesDescriptionsCommentsTitleFirst(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	mk := func(title, desc string) string {
		iw, err := r.svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: title, Description: desc})
		if err != nil {
			t.Fatal(err)
		}
		return iw.Item.Key
	}
	inDesc := mk("unrelated words", "the flamingo migrates at dawn")
	inTitle := mk("flamingo enclosure", "nothing here")
	inComment := mk("another", "plain")
	mk("node-3 crashed", "the node-3 host")
	if _, err := r.svc.CommentOnWorkItem(ctx, engine.WriteOptions{}, inComment, "bo", "saw a flamingo in the comment"); err != nil {
		t.Fatal(err)
	}
	res, err := r.svc.SearchWorkItems(ctx, engine.ReadOptions{}, "flamingo", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 3 || res.Hits[0].Key != inTitle {
		t.Fatalf("hits %+v, want 3 with %s (title match) first", res.Hits, inTitle)
	}
	keys := map[string]bool{}
	for _, h := range res.Hits {
		keys[h.Key] = true
	}
	if !keys[inDesc] || !keys[inComment] {
		t.Fatalf("description or comment match missing: %+v", res.Hits)
	}
	if !strings.Contains(res.Hits[0].Snippet, "[flamingo]") || res.Note == "" {
		t.Fatalf("snippet %q note %q", res.Hits[0].Snippet, res.Note)
	}
	for _, q := range []string{"node-3", `"node-3`, "NEAR(node", "AND", "*", `a"b OR c`} {
		if _, err := r.svc.SearchWorkItems(ctx, engine.ReadOptions{}, q, "", 0); err != nil {
			t.Fatalf("query %q broke the search: %v", q, err)
		}
	}
	res, _ = r.svc.SearchWorkItems(ctx, engine.ReadOptions{}, "node-3", "", 0)
	if len(res.Hits) != 1 {
		t.Fatalf("node-3: %+v", res.Hits)
	}
}

// TestRederivedOnceWhenTheRulesChange: rows derived under other rules (a
// stored version that differs, computed columns that are wrong) are
// recomputed at the next boot, once, logging statelog_rederived.
func TestRederivedOnceWhenTheRulesChange(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, time.Now(), node.Config{DataDir: dir})
	ctx := context.Background()
	scene(r)
	st, ana, bo, done, open := tracker.StatusInProgress, "ana", "bo", tracker.StatusDone, tracker.StatusOpen
	for _, p := range []tracker.ItemPatch{{Status: &st, Assignee: &ana}, {Assignee: &bo}, {Status: &done}, {Status: &open}} {
		if _, err := r.svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-3", 0, p); err != nil {
			t.Fatal(err)
		}
	}
	want := r.dump()
	if _, err := r.n.DB().Exec(`UPDATE tracker_items SET reopens = 7, handoffs = 9; UPDATE tracker_history SET handoffs = 5; UPDATE tracker_projects SET active = 3;
		UPDATE statelog_rules SET version = 0 WHERE domain = 'tracker'`); err != nil {
		t.Fatal(err)
	}
	r.n.Close()
	rec := enginetest.NewRecorder()
	r2 := newRig(t, time.Now(), node.Config{DataDir: dir, Logger: rec.Logger()})
	if got := r2.dump(); got != want {
		t.Fatalf("rows after the rederive differ:\n got %s\nwant %s", got, want)
	}
	lines := rec.Lines(engine.EvRederived)
	if len(lines) != 1 || lines[0].Attrs["from"] != int64(0) || lines[0].Attrs["to"] != int64(trackapply.RulesVersion) || lines[0].Attrs["domain"] != "tracker" || lines[0].Attrs["component"] != "statelog" {
		t.Fatalf("statelog_rederived lines: %+v", lines)
	}
	if rows, _ := lines[0].Attrs["rows"].(int64); rows == 0 {
		t.Fatalf("rederive wrote no rows: %+v", lines[0])
	}
	r2.n.Close()
	rec3 := enginetest.NewRecorder()
	newRig(t, time.Now(), node.Config{DataDir: dir, Logger: rec3.Logger()})
	if n := len(rec3.Lines(engine.EvRederived)); n != 0 {
		t.Fatalf("rederived again on a boot with the same rules: %d lines", n)
	}
}
