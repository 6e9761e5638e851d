package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// reanchorLines holds a reanchor's two lines to the fields the page names.
func reanchorLines(t *testing.T, rec *enginetest.Recorder, kase string, gen uint64) {
	t.Helper()
	st, done := rec.Lines(statelog.EvReanchorStarted), rec.Lines(statelog.EvReanchored)
	if len(st) != 1 || len(done) != 1 {
		t.Fatalf("reanchor lines: started %+v, done %+v", st, done)
	}
	for _, k := range []string{engine.LogDomain, engine.LogStream, "generation", "stream_created_at", "case", "cursor", "keyed_to", engine.LogPosition, "last_seq", "from_generation"} {
		if _, ok := st[0].Attrs[k]; !ok {
			t.Errorf("%s names no %s: %+v", statelog.EvReanchorStarted, k, st[0].Attrs)
		}
	}
	for _, k := range []string{engine.LogDomain, engine.LogStream, "generation", "stream_created_at", "case", "cursor", "prev_last_seq_seen"} {
		if _, ok := done[0].Attrs[k]; !ok {
			t.Errorf("%s names no %s: %+v", statelog.EvReanchored, k, done[0].Attrs)
		}
	}
	if st[0].Attrs["case"] != kase || fmt.Sprint(done[0].Attrs["generation"]) != fmt.Sprint(gen) || st[0].Level.String() != "WARN" {
		t.Errorf("reanchor lines: %+v / %+v, want case %s, generation %d", st[0], done[0], kase, gen)
	}
}

// TestReanchorRecreatedInPlace: a stream deleted and created again under a
// running node is re-anchored with no restart: generation 2, the rows
// kept and followed from the new stream's first record, a generation
// record on it, the computed columns recomputed once, the tracker
// reading and writing again at positions of generation 2, and the
// knowledge base never touched.
func TestReanchorRecreatedInPlace(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), Logger: rec.Logger(), HeartbeatInterval: time.Hour})
	mustProject(t, n.Tracker(), "ENG")
	createItems(t, n, "ENG", 2)
	recreateStream(t, n.Broker(), engine.StreamTracker)
	if _, err := n.Reanchor(ctx, "tracker", statelog.ReanchorRestored, false, ""); engine.CodeOf(err) != engine.CodeInvalidArgument {
		t.Fatalf("a restored reanchor before anything was found: %v, want invalid_argument", err)
	}
	n.Replica(engine.DomainTracker).VerifyLog(ctx)
	if _, err := n.Reanchor(ctx, "tracker", statelog.ReanchorRestored, false, ""); engine.CodeOf(err) != engine.CodeInvalidArgument {
		t.Fatalf("a restored reanchor of a recreated stream: %v, want invalid_argument", err)
	}
	out, err := n.Reanchor(ctx, "tracker", statelog.ReanchorRecreated, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Generation != 2 || out.FromGeneration != 1 || out.Record.Outcome != engine.Applied || !strings.HasPrefix(out.Record.Position, engine.StreamTracker+"@2:") {
		t.Fatalf("reanchor answered %+v", out)
	}
	reanchorLines(t, rec, statelog.ReanchorRecreated, 2)
	if len(rec.Lines(engine.EvRederived)) == 0 {
		t.Errorf("no %s after the checkpoint the reanchor created", engine.EvRederived)
	}
	if got, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, "ENG-2"); err != nil || got.SeenThrough.Generation != 2 {
		t.Fatalf("ENG-2 after the reanchor: %+v %v", got, err)
	}
	w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "on the new stream"})
	if w.Outcome != engine.Applied {
		for _, m := range []string{"statelog_apply_retrying", "statelog_applier_stopped", "jetstream_domain_consumer_rebuilt", "statelog_apply_faulted"} {
			t.Logf("%s: %+v", m, rec.Lines(m))
		}
		t.Logf("applied %d", n.Replica(engine.DomainTracker).Applied())
	}
	enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	if w.Item.Key != "ENG-3" || !strings.HasPrefix(w.Position, engine.StreamTracker+"@2:") {
		t.Fatalf("a create after the reanchor: %+v", w)
	}
	if g := n.Replica(engine.DomainPages).Generation(); g != 1 {
		t.Fatalf("the knowledge base moved to generation %d", g)
	}
}

// TestReanchorRestored: a broker restored from an older copy is
// re-anchored from the log's end: the rows this node held past the copy
// stay, an item the copy still has a record of is updated against it, one
// it lost is updated at an expectation of zero, and both land. Where
// records were written after the restore, the reanchor refuses unless told
// to discard them, and then they apply on no node.
func TestReanchorRestored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	createItems(t, n, "ENG", 1)
	n.Close()
	older := filepath.Join(t.TempDir(), "stream")
	copyDir(t, filepath.Join(dir, "stream"), older)
	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	createItems(t, n, "ENG", 2)
	n.Close()
	restoreStore(t, dir, older)
	// Written after the restore, against the copy's rows.
	offlineBroker(t, dir, func(b *broker.Embedded) {
		data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateProject, Version: 1, Writer: "n9", Generation: 1,
			Subject: trackrec.ProjectSubject("OPS"), Scope: []string{trackrec.ProjectScope("OPS")}, Payload: []byte(`{"key":"OPS","name":"ops"}`)})
		if _, err := b.JS.Publish(ctx, trackrec.ProjectSubject("OPS"), data); err != nil {
			t.Fatal(err)
		}
	})
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	if _, err := n.Reanchor(ctx, "tracker", statelog.ReanchorRestored, false, ""); engine.CodeOf(err) != engine.CodeInvalidArgument {
		t.Fatalf("a restored reanchor over records written after the restore, without discard: %v", err)
	}
	out, err := n.Reanchor(ctx, "tracker", statelog.ReanchorRestored, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Generation != 2 || out.Discarded == 0 {
		t.Fatalf("reanchor answered %+v", out)
	}
	reanchorLines(t, rec, statelog.ReanchorRestored, 2)
	if l := rec.Lines(statelog.EvReanchored)[0]; fmt.Sprint(l.Attrs["discarded"]) != fmt.Sprint(out.Discarded) {
		t.Errorf("%s names discarded %v, want %d", statelog.EvReanchored, l.Attrs["discarded"], out.Discarded)
	}
	if _, err := n.Tracker().GetProject(ctx, engine.ReadOptions{Level: engine.Linearizable}, "OPS"); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("the project written after the restore: %v, want not_found (discarded)", err)
	}
	for _, key := range []string{"ENG-1", "ENG-3"} {
		title := "after the restore"
		w, err := n.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, key, 0, tracker.ItemPatch{Title: &title})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	}
	// A node that had not learnt of the move writes in generation 1, after
	// the generation record: overtaken, it applies nowhere.
	strangeRecord(t, n, "n8", 1)
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		for _, l := range rec.Lines(engine.EvRecordGated) {
			if l.Attrs[engine.LogGate] == statelog.GateOvertaken {
				return nil
			}
		}
		return fmt.Errorf("no record gated %s", statelog.GateOvertaken)
	})
	if _, err := n.Tracker().GetProject(ctx, engine.ReadOptions{Level: engine.Linearizable}, "OPS"); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("an overtaken record's project: %v, want not_found", err)
	}
}

// strangeRecord appends, by hand, a record writer decided in generation
// gen, which the node never entered.
func strangeRecord(t *testing.T, n *node.Node, writer string, gen uint64) {
	t.Helper()
	data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateProject, Version: 1, Writer: writer, Generation: gen,
		Subject: trackrec.ProjectSubject("OPS"), Scope: []string{trackrec.ProjectScope("OPS")}, Payload: []byte(`{"key":"OPS","name":"ops"}`)})
	if _, err := n.Log(engine.DomainTracker).Publish(context.Background(), trackrec.ProjectSubject("OPS"), data, "", nil); err != nil {
		t.Fatal(err)
	}
}

// stoppedFor waits for the applier to stop naming why.
func stoppedFor(t *testing.T, rec *enginetest.Recorder, why string) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		for _, l := range rec.Lines(engine.EvApplierStopped) {
			if strings.Contains(fmt.Sprint(l.Attrs["why"]), why) {
				return nil
			}
		}
		return fmt.Errorf("no %s naming %q", engine.EvApplierStopped, why)
	})
}

// TestRecordOfAnUnknownGenerationStops: a record decided in a generation
// this node never entered stops its applier naming why, and its reads
// refuse; an abandoned reanchor is refused while the generation's writer
// is a live peer.
func TestRecordOfAnUnknownGenerationStops(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), Logger: rec.Logger()})
	mustProject(t, n.Tracker(), "ENG")
	strangeRecord(t, n, "n8", 5)
	stoppedFor(t, rec, "never entered")
	if _, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale}); engine.CodeOf(err) != engine.CodeStalled {
		t.Fatalf("a read of a stopped tracker: %v, want stalled", err)
	}
	if _, err := n.Reanchor(ctx, "tracker", statelog.ReanchorAbandoned, false, ""); engine.CodeOf(err) != engine.CodeInvalidArgument || !strings.Contains(err.Error(), "not evicted") {
		t.Fatalf("an abandoned reanchor of a generation a live peer opened: %v", err)
	}
}

// TestReanchorAbandoned: a peer evicted from the fleet wrote in a
// generation of its own; this node's applier stops there, and an
// abandoned reanchor follows this node's own checkpoint in a generation
// past it, that generation's records gated abandoned (the framework's
// gate, asked before the eviction's).
func TestReanchorAbandoned(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), Logger: rec.Logger()})
	mustProject(t, n.Tracker(), "ENG")
	if w, err := n.NodeGates().EvictNode(ctx, engine.WriteOptions{}, "n9"); err != nil {
		t.Fatalf("evict n9: %+v %v", w, err)
	}
	strangeRecord(t, n, "n9", 5)
	stoppedFor(t, rec, "never entered")
	out, err := n.Reanchor(ctx, "tracker", statelog.ReanchorAbandoned, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Generation != 6 || out.FromGeneration != 1 {
		t.Fatalf("reanchor answered %+v", out)
	}
	reanchorLines(t, rec, statelog.ReanchorAbandoned, 6)
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		for _, l := range rec.Lines(engine.EvRecordGated) {
			if l.Attrs[engine.LogGate] == statelog.GateAbandoned {
				return nil
			}
		}
		return fmt.Errorf("no record gated %s", statelog.GateAbandoned)
	})
	if _, err := n.Tracker().GetProject(ctx, engine.ReadOptions{Level: engine.Linearizable}, "OPS"); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("the abandoned generation's project: %v, want not_found", err)
	}
	w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "in generation 6"})
	enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
}
